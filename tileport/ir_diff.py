"""Structural comparison of two Tile IR texts: the cuTile Python reference and the cuTile Rust port.

Both sides are printed by the same disassembler (``tileirdisasm``), so spelling is
uniform; what differs between the two frontends is *how* they build the same
computation (SSA names, op order, hoisting, duplicated constants, asserts, assumes,
fused multiply-adds, stride specialisation ...).  This module

1. parses the text (:func:`parse_tileir`) into :class:`Module` / :class:`Entry` /
   :class:`Op` / :class:`Region`, rejecting malformed input with :class:`IRParseError`;
2. normalises each side (rules below, each with the reason it is sound);
3. gives every op a *structural signature*: a hash of its opname, attributes, result
   types and its operands' signatures (so it depends on dataflow only, never on SSA
   names, print order or which region it sits in);
4. compares the multisets of signatures and reports the *frontier* of the difference:
   unmatched ops whose inputs all match, i.e. where the two programs first part ways
   (:func:`diff_ir`); :func:`run` writes the stage verdict.

Normalisation rules (applied to both sides; see the functions named in brackets):

* SSA names, entry symbol names, ``di_*`` names are ignored: signatures are built from
  dataflow, entry arguments are identified by position and type.  [_Sig]
* ``assume`` is transparent, its result aliases its operand: an assume only hands the
  optimiser a fact (bounds, divisibility); the value is unchanged.  Differences in
  assumes are reported as ``info`` at most.  [_Normaliser.assumes]
* ``assert`` ops are removed (cuTile Rust inserts partition bounds checks the Python
  frontend does not): an assert computes no value another op reads, it can only abort a
  launch that would otherwise access out of bounds; removing it leaves every value of a
  successful run unchanged.  Their count is reported as ``info``.  [_Normaliser.asserts]
* Dead pure ops are removed (liveness from side effects): an op whose results nobody
  reads and that has no effect cannot change the kernel's outputs.  Loads are kept
  (counted as memory traffic) even when dead.  [_Normaliser.dce]
* Pure ops with identical signatures are one op (common-subexpression merge): a pure op
  is a function of its operands and attributes, so two copies compute the same value.
  ``make_token`` takes no operand and is pure: all tokens it makes are equivalent.
  Pure ops therefore compare as a *set*, side-effecting ops as a *multiset*.  [_compare]
* ``broadcast``/``reshape`` whose input type equals its output type is the identity.
* Splats: any chain of ``reshape``/``broadcast`` starting from a rank-0 value ``x`` is
  ``splat(x, T)`` (every element equals ``x``); a splat of a rank-0 ``constant`` is that
  constant at type ``T``.  Frontends differ in how they materialise scalars.
* ``fma a, b, negf(c)`` is ``subf(mulf(a, b), c)`` (IEEE 754 defines x - y as x + (-y)); the
  Python frontend contracts ``a*b - c`` that way.
* ``fma a, b, c`` is ``addf(mulf(a, b), c)`` carrying the fma's rounding / flush-to-zero
  flags: the Python frontend contracts ``a*b+c`` itself, the Rust frontend leaves the
  contraction to the translator; an unfused pair rounds twice and tileiras does not
  always contract it, so a difference is reported as ``warn`` (math, kernel).
* ``join_tokens`` is an unordered set; ``make_token`` operands of a join are dropped
  (a fresh token carries no ordering) and a join of one token is that token.
* ``get_index_space_shape`` of a partition view reads only the tensor view and the
  tile shape, never the padding value (the index space is ``ceil(shape / tile)``), so
  it is rewritten to read the tensor view directly with the padding erased.
* Stride specialisation: where one side builds a tensor view with a static stride
  (``strides = [%s, 1]``) and the other reads that stride at run time, the dynamic side
  is specialised to the constant.  This equals the reference exactly when the run-time
  stride has that value, which the port's host launcher must guarantee (the Rust
  launcher is compiled for declared strides); it is reported as ``info`` (memory, host).
  ``strides=[...]`` is then erased from the *types* of all ops: the strides are carried
  by the ``make_tensor_view`` op that every user of the view reaches through dataflow.
* Commutative ops (addf, mulf, maxf, minf, addi, muli, maxi, mini, andi, ori, xori)
  compare their two operands as an unordered pair; everything else keeps order.
* Loop-invariant code motion does not matter: an op's signature does not depend on the
  region it sits in, only on its operands; a region's block arguments are signed from
  the owning op's *header* (opname, attributes, operand signatures), the index and the
  type, and a region op (for/loop/if/reduce/scan) is signed from its header plus the
  multiset of signatures of its body's side effects and terminators (yield/continue/
  break), which captures e.g. a reduction's combiner.  Loads are not part of that
  multiset because the Python compiler hoists invariant loads out of loops.
* Hints (op ``optimization_hints = <...>``, bare ``latency = N`` / ``allow_tma = b``,
  entry ``optimization_hints=<...>`` with ``num_cta_in_cga``, ``occupancy`` ...) are
  stripped from signatures and compared separately on matched ops/entries (``warn``,
  category hint).  Empty hint groups (``default = {}``) equal no hints.
* Type comparison of entries: argument count and types by position (critical,
  category signature, owner host).

Known limits: token dataflow between memory ops is compared as written (after the
make_token/join rules), so a frontend that threads tokens through memory ops in a
different but equivalent order shows up as a memory divergence; no algebraic
rewriting beyond the rules above (``a - b`` vs ``a + (-b)`` differ).
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from .ir_locs import op_sources
from .verdict import Finding, Verdict, loc, write

__all__ = [
    "IRParseError", "Arg", "Op", "Region", "Entry", "Module", "DiffResult",
    "parse_tileir", "diff_ir", "run", "category_of",
]

# --------------------------------------------------------------------------------------
# Op vocabulary (the op names tileirdisasm prints, cuda_tile dialect of CUDA 13)
# --------------------------------------------------------------------------------------

KNOWN_OPS = frozenset("""
absf absi addf addi alloca andi assert assume atan2 atomic_cas_tko atomic_red_view_tko
atomic_rmw_tko bitcast break broadcast cat ceil cmpf cmpi constant continue cos cosh divf
divi exp exp2 exti extract floor fma for fpowf fpowi ftof ftoi gdc_launch_dependents_tko
gdc_wait_tko get_global get_index_space_shape get_num_tile_blocks get_tensor_shape
get_tile_block_id global if insert int_to_ptr iota itof join_tokens load_ptr_tko
load_view_tko log log2 loop make_gather_scatter_view make_partition_view make_strided_view
make_tensor_view make_token maxf maxi memory_fence_alias_tko minf mini mmaf mmaf_scaled
mmai mulf mulhii muli negf negi offset ori pack permute print_tko ptr_to_int ptr_to_ptr
reduce remf remi reshape return rsqrt scan select shli shri sin sinh sqrt store_ptr_tko
store_view_tko subf subi tan tanh trunci unpack xori yield
multimem_load_reduce_view_tko multimem_reduce_view_tko multimem_store_view_tko
gather scatter splat
""".split())

COMMUTATIVE = frozenset("addf mulf maxf minf addi muli maxi mini andi ori xori".split())
TERMINATORS = frozenset("return yield continue break".split())
REGION_OPS = frozenset("for loop if reduce scan".split())
CAST_OPS = frozenset("ftof itof ftoi exti trunci bitcast ptr_to_int int_to_ptr ptr_to_ptr".split())
MEMORY_OPS = frozenset("""make_partition_view make_tensor_view make_strided_view
make_gather_scatter_view get_index_space_shape get_tensor_shape make_token join_tokens
offset memory_fence_alias_tko alloca global get_global""".split())


def _is_effectful_name(opname: str) -> bool:
    """Ops with a side effect (or kept as if they had one: loads)."""
    return (opname.startswith(("load", "store", "atomic", "multimem", "gdc_", "print"))
            or opname in ("assert", "memory_fence_alias_tko", "scatter", "gather"))


def category_of(opname: str) -> str:
    """Verdict category for a divergence at an op named ``opname``.

    memory: loads/stores/views/atomics/gather/scatter/tokens; reduction: reduce/scan;
    cast: ftof/itof/...; control_flow: for/if/loop/terminators; constant; else math.
    """
    if (opname.startswith(("load", "store", "atomic", "multimem"))
            or opname in MEMORY_OPS or opname in ("gather", "scatter")):
        return "memory"
    if opname in ("reduce", "scan"):
        return "reduction"
    if opname in CAST_OPS:
        return "cast"
    if opname in REGION_OPS or opname in TERMINATORS:
        return "control_flow"
    if opname == "constant":
        return "constant"
    return "math"


# --------------------------------------------------------------------------------------
# Parsed representation
# --------------------------------------------------------------------------------------

class IRParseError(ValueError):
    """Malformed Tile IR text.  ``str(err)`` is ``"<path>:<line>: <cause>"``.

    Attributes: ``path`` (str), ``line`` (1-based int), ``cause`` (str), ``text`` (the
    offending source line, may be empty).
    """

    def __init__(self, path: str, line: int, cause: str, text: str = ""):
        self.path, self.line, self.cause, self.text = str(path), line, cause, text
        msg = f"{path}:{line}: {cause}"
        if text.strip():
            msg += f"  [{text.strip()[:160]}]"
        super().__init__(msg)


@dataclass
class Arg:
    """An entry argument or a region block argument.  ``position`` is 0-based."""

    position: int
    name: str
    type: str
    vid: int = -1          # parser-unique value id


@dataclass
class Region:
    """A nested region: block arguments and a body of ops.  ``line`` is where it opens."""

    args: list[Arg]
    ops: list["Op"]
    line: int


@dataclass
class Op:
    """One op line (plus its nested regions).

    ``results``: result names as written (``%1:2`` becomes ``%1#0``, ``%1#1``);
    ``operands``: operand SSA refs in order of appearance (block-argument definitions of
    the header, e.g. ``%loopIdx`` / ``%iterArg0 =``, are not operands);
    ``attrs``: the text after the opname with every SSA name replaced by ``%`` and
    whitespace collapsed (includes types and hints); ``types``: the part of ``attrs``
    after the top-level `` : ``; ``result_types``: one type per result; ``line``: 1-based
    source line; ``text``: the source line.
    """

    results: list[str]
    opname: str
    operands: list[str]
    attrs: str
    result_types: list[str]
    regions: list[Region]
    line: int
    text: str
    result_ids: list[int] = field(default_factory=list)
    operand_ids: list[int] = field(default_factory=list)
    pre: str = ""          # attrs before the top-level " : " (hints stripped)
    types: str = ""        # attrs after the top-level " : "
    hints: str = ""        # canonical hint text ("" = none)


@dataclass
class Entry:
    """A kernel entry: ``entry @name(args) attributes { body }``."""

    name: str
    args: list[Arg]
    attributes: str
    body: list[Op]
    line: int
    text: str
    hints: str = ""


@dataclass
class Module:
    """A parsed Tile IR text: its entries (and module-level non-entry ops, e.g. globals)."""

    path: str
    name: str | None
    entries: list[Entry]
    globals: list[Op] = field(default_factory=list)
    n_values: int = 0


# --------------------------------------------------------------------------------------
# Lexical helpers
# --------------------------------------------------------------------------------------

_NAME = r"[A-Za-z0-9_$.\-]+"
_SSA_RE = re.compile(r"%(" + _NAME + r")(?:#(\d+))?")
_RESULTS_RE = re.compile(
    r"^\s*(%" + _NAME + r"(?::\d+)?(?:\s*,\s*%" + _NAME + r"(?::\d+)?)*)\s*=\s*(?!=)(.*)$")
_OPNAME_RE = re.compile(r"^([A-Za-z_][\w.]*)(.*)$")
_BLOCKARGS_RE = re.compile(r"^\((.*)\)\s*\{$")
_ENTRY_RE = re.compile(r"^entry\s+@([\w$.\-\"]+)\s*\(")
_MODULE_RE = re.compile(r"^(?:cuda_tile\.)?module(?:\s+@[\w$.\-\"]+)?(?:\s+attributes\s*\{.*\})?\s*\{$")
_HINTS_KEY_RE = re.compile(r"optimization_hints\s*=\s*<")
_BARE_HINT_RE = re.compile(
    r"\b(latency|allow_tma|num_cta_in_cga|num_ctas|occupancy)\s*=\s*([\w.\-]+)")


def _mask_strings(s: str) -> str:
    """Replace the contents of "..." literals by ``_`` (same length), so that SSA-looking
    text and brackets inside strings are ignored by the scanners."""
    out, in_str, esc = [], False, False
    for ch in s:
        if in_str:
            if esc:
                esc = False
                out.append("_")
            elif ch == "\\":
                esc = True
                out.append("_")
            elif ch == '"':
                in_str = False
                out.append(ch)
            else:
                out.append("_")
        else:
            if ch == '"':
                in_str = True
            out.append(ch)
    return "".join(out)


def _levels(masked: str) -> list[int]:
    """Bracket nesting level of every char of a string-masked text: a bracket char gets
    the level it opens/closes at, other chars the level they sit at.  ``->`` is an arrow,
    not a closing angle bracket.  The level may go negative on unbalanced input."""
    out, depth, i, n = [0] * len(masked), 0, 0, len(masked)
    while i < n:
        ch = masked[i]
        if ch == "-" and i + 1 < n and masked[i + 1] == ">":
            out[i] = out[i + 1] = depth
            i += 2
            continue
        if ch in "<([{":
            out[i] = depth
            depth += 1
        elif ch in ">)]}":
            depth -= 1
            out[i] = depth
        else:
            out[i] = depth
        i += 1
    return out


def _balanced(s: str) -> bool:
    """Are the brackets of ``s`` (strings ignored, ``->`` not a bracket) balanced?"""
    masked = _mask_strings(s)
    lv = _levels(masked)
    if any(x < 0 for x in lv):
        return False
    closing = [i for i, ch in enumerate(masked) if ch in ">)]}" and not (ch == ">" and i and masked[i - 1] == "-")]
    opening = [i for i, ch in enumerate(masked) if ch in "<([{"]
    return len(opening) == len(closing)


def _split_top(s: str, sep: str = ",") -> list[str]:
    """Split at top-level ``sep`` characters (not inside <>, (), [], {} or strings)."""
    masked = _mask_strings(s)
    lv = _levels(masked)
    parts, start = [], 0
    for i, ch in enumerate(masked):
        if ch == sep and lv[i] == 0:
            parts.append(s[start:i])
            start = i + 1
    parts.append(s[start:])
    return [p.strip() for p in parts if p.strip()]


def _find_top(s: str, token: str, last: bool = False) -> int:
    """Index of the first (or last) top-level occurrence of ``token`` in ``s``, or -1."""
    masked = _mask_strings(s)
    lv = _levels(masked)
    found = -1
    for i in range(len(masked)):
        if lv[i] == 0 and masked.startswith(token, i):
            if not last:
                return i
            found = i
    return found


def _balanced_end(s: str, open_idx: int) -> int:
    """Index just past the bracket closing the one at ``open_idx`` (-1 if unbalanced)."""
    masked = _mask_strings(s)
    lv = _levels(masked)
    base = lv[open_idx]
    for i in range(open_idx + 1, len(masked)):
        if lv[i] == base and masked[i] in ">)]}" and not (masked[i] == ">" and masked[i - 1] == "-"):
            return i + 1
    return -1


_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')


def _ws(s: str) -> str:
    """Canonical spacing: single spaces, none around ``=``, ``", "`` after commas;
    string literals are kept verbatim."""
    def canon(part: str) -> str:
        part = re.sub(r"\s+", " ", part)
        part = re.sub(r"\s*=\s*", "=", part)
        return re.sub(r"\s*,\s*", ", ", part)
    out, last = [], 0
    for m in _STRING_RE.finditer(s):
        out += [canon(s[last:m.start()]), m.group(0)]
        last = m.end()
    out.append(canon(s[last:]))
    return "".join(out).strip()


def _canon_hint_body(body: str) -> str:
    """Canonical text of an ``optimization_hints`` body ``default = {a = 1, b = 2}, ...``:
    groups sorted, keys sorted, empty groups dropped ("" when nothing is left)."""
    groups = []
    for part in _split_top(body):
        m = re.match(r"^([\w.\-]+)\s*=\s*\{(.*)\}$", part.strip(), re.S)
        if not m:
            groups.append(_ws(part))
            continue
        items = sorted(_ws(x) for x in _split_top(m.group(2)))
        if items:
            groups.append(f"{m.group(1)}={{{', '.join(items)}}}")
    return "; ".join(sorted(groups))


def _extract_hints(text: str) -> tuple[str, str]:
    """Strip hints from ``text``.  Returns ``(text_without_hints, canonical_hints)``.

    Recognises ``optimization_hints = <...>`` (balanced angle brackets) and bare
    ``latency = N``, ``allow_tma = b``, ``num_cta_in_cga = N``, ``occupancy = N``.
    """
    hints = []
    while True:
        m = _HINTS_KEY_RE.search(_mask_strings(text))
        if not m:
            break
        end = _balanced_end(text, m.end() - 1)
        if end < 0:
            break
        body = text[m.end():end - 1]
        canon = _canon_hint_body(body)
        if canon:
            hints.append(canon)
        text = text[:m.start()] + text[end:]
    masked = _mask_strings(text)
    bare = [(m.start(), m.end(), f"{m.group(1)}={m.group(2)}") for m in _BARE_HINT_RE.finditer(masked)]
    for start, end, item in reversed(bare):
        hints.append(item)
        text = text[:start] + text[end:]
    text = re.sub(r",\s*,", ",", text)
    return text, "; ".join(sorted(hints))


def _result_types(attrs_text: str, n_results: int) -> list[str]:
    """Result types from an op's attribute text: the list after the last top-level
    ``->`` (parentheses removed), else the last type after the top-level `` : ``."""
    if n_results == 0:
        return []
    arrow = _find_top(attrs_text, "->", last=True)
    if arrow >= 0:
        tail = attrs_text[arrow + 2:].strip()
        if tail.startswith("(") and _balanced_end(tail, 0) == len(tail):
            tail = tail[1:-1]
        types = _split_top(tail)
    else:
        colon = _find_top(attrs_text, " : ")
        types = _split_top(attrs_text[colon + 3:]) if colon >= 0 else []
        types = types[-1:]
    if not types:
        return [""] * n_results
    if len(types) < n_results:
        types = types + [types[-1]] * (n_results - len(types))
    return [_ws(t) for t in types[:n_results]]


# --------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------

class _Parser:
    """Line-oriented recursive-descent parser for tileirdisasm output."""

    def __init__(self, text: str, path: str):
        self.path = str(path)
        self.lines = text.splitlines()
        self.i = 0                      # index of the next line to read
        self.values: list[str] = []     # value id -> name (for diagnostics)

    # -- line access --------------------------------------------------------------
    def err(self, lineno: int, cause: str) -> IRParseError:
        text = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return IRParseError(self.path, lineno, cause, text)

    def next_line(self) -> tuple[int, str] | None:
        """Next significant line as ``(lineno, stripped)``; skips blanks, comments and
        ``#loc`` aliases."""
        while self.i < len(self.lines):
            self.i += 1
            s = self.lines[self.i - 1].strip()
            s = re.sub(r"\s+loc\((?:[^()]|\([^()]*\))*\)\s*(\{?)$", r" \1", s).strip()
            if not s or s.startswith("//") or s.startswith("#"):
                continue
            return self.i, s
        return None

    def peek_line(self) -> tuple[int, str] | None:
        save = self.i
        nl = self.next_line()
        self.i = save
        return nl

    # -- scopes -------------------------------------------------------------------
    def new_value(self, name: str) -> int:
        self.values.append(name)
        return len(self.values) - 1

    def define(self, scope: dict, name: str, vid: int, lineno: int) -> None:
        """Bind ``name`` in ``scope`` (names may shadow outer scopes, not repeat)."""
        if name in scope:
            raise self.err(lineno, f"redefinition of SSA value {name}")
        scope[name] = vid

    def lookup(self, scopes: list[dict], name: str, idx: str | None, lineno: int) -> int:
        keys = [f"%{name}#{idx}"] if idx is not None else [f"%{name}", f"%{name}#0"]
        if idx == "0":
            keys.append(f"%{name}")
        for scope in reversed(scopes):
            for k in keys:
                if k in scope:
                    return scope[k]
        shown = f"%{name}" + (f"#{idx}" if idx is not None else "")
        raise self.err(lineno, f"use of undefined SSA value {shown}")

    # -- grammar ------------------------------------------------------------------
    def parse(self) -> Module:
        mod = Module(path=self.path, name=None, entries=[])
        first = self.peek_line()
        if first is None:
            raise self.err(max(1, len(self.lines)), "empty input: no entry found")
        wrapped = False
        if _MODULE_RE.match(first[1]):
            self.next_line()
            m = re.search(r"@([\w$.\-\"]+)", first[1])
            mod.name = m.group(1) if m else None
            wrapped = True
        module_scope: dict = {}
        while True:
            nl = self.next_line()
            if nl is None:
                if wrapped:
                    raise self.err(len(self.lines),
                                   f"unexpected end of input: module opened at line {first[0]} is not closed")
                break
            lineno, s = nl
            if s == "}":
                if not wrapped:
                    raise self.err(lineno, "unbalanced '}' at module level")
                trailing = self.next_line()
                if trailing is not None:
                    raise self.err(trailing[0], "unexpected text after the end of the module")
                break
            if s.startswith("entry"):
                mod.entries.append(self.parse_entry(lineno, s, [module_scope]))
            elif s.startswith(("global", "cuda_tile.global")):
                mod.globals.append(self.parse_op(lineno, s, [module_scope]))
            else:
                raise self.err(lineno, "expected 'entry' at module level (garbage line?)")
        if not mod.entries:
            raise self.err(max(1, len(self.lines)), "no entry found")
        mod.n_values = len(self.values)
        return mod

    def parse_entry(self, lineno: int, s: str, scopes: list[dict]) -> Entry:
        m = _ENTRY_RE.match(s)
        if not m:
            raise self.err(lineno, "malformed entry header")
        open_idx = m.end() - 1
        close = _balanced_end(s, open_idx)
        if close < 0:
            raise self.err(lineno, "unbalanced parentheses in entry argument list")
        if not s.endswith("{"):
            raise self.err(lineno, "entry header must end with '{'")
        scope: dict = {}
        args = []
        for pos, part in enumerate(_split_top(s[open_idx + 1:close - 1])):
            am = re.match(r"^%(" + _NAME + r")\s*:\s*(.+)$", part)
            if not am:
                raise self.err(lineno, f"malformed entry argument {part!r}")
            name = "%" + am.group(1)
            vid = self.new_value(name)
            self.define(scope, name, vid, lineno)
            args.append(Arg(pos, name, _ws(am.group(2)), vid))
        attributes = s[close:-1].strip()
        _, hints = _extract_hints(attributes)
        body, closer = self.parse_block(scopes + [scope], lineno, "entry")
        if closer != "}":
            raise self.err(self.i, "'} else {' closes an entry")
        return Entry(m.group(1), args, attributes, body, lineno, self.lines[lineno - 1], hints)

    def parse_block(self, scopes: list[dict], open_line: int, what: str) -> tuple[list[Op], str]:
        """Parse ops until a closing ``}`` or ``} else {``; returns (ops, closer)."""
        ops: list[Op] = []
        while True:
            nl = self.next_line()
            if nl is None:
                raise self.err(len(self.lines),
                               f"unexpected end of input: '{{' of the {what} opened at line "
                               f"{open_line} is not closed (unbalanced braces)")
            lineno, s = nl
            if s.startswith("}"):
                closer = re.sub(r"\s+", " ", s)
                if closer not in ("}", "} else {"):
                    raise self.err(lineno, "unexpected text after '}'")
                return ops, closer
            ops.append(self.parse_op(lineno, s, scopes))

    def parse_op(self, lineno: int, s: str, scopes: list[dict]) -> Op:
        """Parse one op line (and the regions that follow it); defines its results."""
        masked = _mask_strings(s)
        results: list[str] = []
        m = _RESULTS_RE.match(masked)
        body_start = 0
        if m:
            for part in m.group(1).split(","):
                part = part.strip()
                rm = re.match(r"^%(" + _NAME + r")(?::(\d+))?$", part)
                if rm.group(2):
                    results += [f"%{rm.group(1)}#{k}" for k in range(int(rm.group(2)))]
                else:
                    results.append(f"%{rm.group(1)}")
            body_start = m.start(2)
        om = _OPNAME_RE.match(masked[body_start:])
        if not om:
            raise self.err(lineno, "cannot parse op (garbage line?)")
        opname = om.group(1)
        if opname.startswith("cuda_tile."):
            opname = opname[len("cuda_tile."):]
        if opname not in KNOWN_OPS:
            raise self.err(lineno, f"unknown op '{opname}' (garbage line?)")
        rest_start = body_start + len(om.group(1))
        header, mheader = s[rest_start:], masked[rest_start:]
        opens_region = mheader.rstrip().endswith("{")
        if opens_region:
            cut = mheader.rstrip().rfind("{")
            header, mheader = header[:cut], mheader[:cut]
        if header.count('"') % 2:
            raise self.err(lineno, "unterminated string literal")
        if not _balanced(mheader):
            raise self.err(lineno, "unbalanced brackets in op")

        # SSA references of the header: block-argument definitions vs operands
        defs: list[str] = []
        operand_names: list[str] = []
        operand_ids: list[int] = []
        pieces, last = [], 0
        for sm in _SSA_RE.finditer(mheader):
            pieces.append(header[last:sm.start()])
            pieces.append("%")
            last = sm.end()
            after = mheader[sm.end():]
            before = mheader[:sm.start()]
            is_def = (re.match(r"\s*=(?!=)", after) is not None
                      or (opname == "for" and re.search(r"^\s*$", before) is not None
                          and re.match(r"\s+in\b", after) is not None))
            if is_def:
                defs.append(sm.group(0))
            else:
                operand_names.append(sm.group(0))
                operand_ids.append(self.lookup(scopes, sm.group(1), sm.group(2), lineno))
        pieces.append(header[last:])
        attrs_raw = "".join(pieces)
        if defs and not opens_region:
            raise self.err(lineno, f"block arguments {', '.join(defs)} defined by an op without a region")
        stripped, hints = _extract_hints(attrs_raw)
        colon = _find_top(stripped, " : ")
        pre = stripped[:colon] if colon >= 0 else stripped
        types = stripped[colon + 3:] if colon >= 0 else ""
        # a region op's result types come after its '->'; compute on the full text
        rtypes = _result_types(stripped, len(results))
        op = Op(results=results, opname=opname, operands=operand_names, attrs=_ws(attrs_raw),
                result_types=rtypes, regions=[], line=lineno, text=self.lines[lineno - 1].rstrip(),
                operand_ids=operand_ids, pre=_ws(pre), types=_ws(types), hints=hints)

        # regions: "... {" on the op line, or a "(%a: t, %b: t) {" line after it
        region_args: list[Arg] = []
        if opens_region:
            header_types = self._header_block_arg_types(opname, stripped, len(defs), rtypes)
            region_args = [Arg(k, name, header_types[k]) for k, name in enumerate(defs)]
        else:
            nxt = self.peek_line()
            if nxt is not None and _BLOCKARGS_RE.match(nxt[1]):
                self.next_line()
                bm = _BLOCKARGS_RE.match(nxt[1])
                for k, part in enumerate(_split_top(bm.group(1))):
                    am = re.match(r"^%(" + _NAME + r")\s*:\s*(.+)$", part)
                    if not am:
                        raise self.err(nxt[0], f"malformed block argument {part!r}")
                    region_args.append(Arg(k, "%" + am.group(1), _ws(am.group(2))))
                opens_region = True
        if opens_region != (opname in REGION_OPS):
            raise self.err(lineno, f"op '{opname}' cannot have a region" if opens_region
                           else f"op '{opname}' needs a region ('{{' missing)")
        if opens_region:
            while True:
                rscope: dict = {}
                for a in region_args:
                    a.vid = self.new_value(a.name)
                    self.define(rscope, a.name, a.vid, lineno)
                ops, closer = self.parse_block(scopes + [rscope], lineno, f"'{opname}' region")
                op.regions.append(Region(region_args, ops, lineno))
                if closer == "}":
                    break
                if opname != "if" or len(op.regions) >= 2:
                    raise self.err(self.i, "'} else {' only closes the then-region of an 'if'")
                region_args = []
        for r in results:
            vid = self.new_value(r)
            self.define(scopes[-1], r, vid, lineno)
            op.result_ids.append(vid)
        return op

    @staticmethod
    def _header_block_arg_types(opname: str, text: str, n: int, rtypes: list[str]) -> list[str]:
        """Types of block args defined in a region header (``for %i ... : T iter_values(...)
        -> (Ts)``): induction variable type, then the iteration values' types."""
        types: list[str] = []
        if opname == "for":
            colon = _find_top(text, " : ")
            ivt = ""
            if colon >= 0:
                ivt = re.split(r"\s+iter_values|\s*->", text[colon + 3:])[0]
            types.append(_ws(ivt))
            types += rtypes
        else:
            types += rtypes
        types += [""] * n
        return types[:n]


def parse_tileir(text: str, path: str = "<ir>") -> Module:
    """Parse tileirdisasm output (optionally wrapped in ``cuda_tile.module @m { ... }``).

    Args:
        text: the IR text.
        path: file name used in error messages and locations.
    Returns:
        a :class:`Module`; every op's operands are resolved against the visible scope.
    Raises:
        IRParseError: ``path:line: cause`` for unbalanced braces, undefined or redefined
        SSA values, unknown ops / garbage lines, malformed headers.
    """
    return _Parser(text, path).parse()


# --------------------------------------------------------------------------------------
# Normalised graph
# --------------------------------------------------------------------------------------

@dataclass(eq=False)
class _Val:
    """A value of the normalised graph: op result, entry arg or region block arg."""

    kind: str                         # "op" | "arg" | "barg"
    type: str
    index: int                        # result index / arg position / block-arg index
    node: "_Node | None" = None       # producer (op) or owner (barg)
    region_index: int = 0             # for barg
    alias: "_Val | None" = None       # set when a normalisation forwards this value
    name: str = ""

    def resolve(self) -> "_Val":
        v = self
        while v.alias is not None:
            v = v.alias
        return v


@dataclass(eq=False)
class _Node:
    """An op of the normalised graph."""

    opname: str
    pre: str
    types: str
    result_types: list[str]
    operands: list[_Val]
    results: list[_Val]
    regions: list["_Region"]
    parent: "_Region | None"
    line: int | None
    text: str
    hints: str = ""
    stride_spec: list | None = None   # make_tensor_view: per stride ("op", i) | ("lit", s)

    def args(self) -> list[_Val]:
        return [v.resolve() for v in self.operands]


@dataclass(eq=False)
class _Region:
    owner: _Node
    index: int
    args: list[_Val]
    nodes: list[_Node]


def _rank0(t: str) -> bool:
    """True for a rank-0 tile type (``tile<f32>``, ``tile<ptr<f16>>``)."""
    t = t.strip()
    return t.startswith("tile<") and t.endswith(">") and not re.match(r"[\d?]", t[5:])


def _scalar_constant(n: "_Node | None") -> bool:
    """A ``constant`` holding one scalar value (``<f32: 1.0>``): a splat at its type."""
    return (n is not None and n.opname == "constant"
            and re.fullmatch(r"<\s*\w+\s*:\s*[^\[\],<>]+>", n.pre.strip()) is not None)


class _Side:
    """One side (reference or port) of one entry: graph + normalisation bookkeeping."""

    def __init__(self, entry: Entry, path: str):
        self.entry, self.path = entry, path
        self.vals: dict[int, _Val] = {}
        self.args = []
        for a in entry.args:
            v = _Val("arg", a.type, a.position, name=a.name)
            self.vals[a.vid] = v
            self.args.append(v)
        self.body = self._build(entry.body, None)
        self.n_ops_before = sum(1 for _ in _iter_ops(entry.body))
        self.n_asserts = 0
        self.n_fma = 0
        self.fma_adds: list = []        # the addf/subf and mulf nodes that stand for an fma
        self.assumes: list[tuple[str, _Val]] = []

    def _build(self, ops: list[Op], parent: _Region | None) -> list[_Node]:
        nodes = []
        for op in ops:
            n = _Node(op.opname, op.pre, op.types, list(op.result_types),
                      [self.vals[i] for i in op.operand_ids], [], [], parent, op.line,
                      op.text, op.hints)
            for k, vid in enumerate(op.result_ids):
                v = _Val("op", op.result_types[k] if k < len(op.result_types) else "", k, n,
                         name=op.results[k])
                self.vals[vid] = v
                n.results.append(v)
            for ri, reg in enumerate(op.regions):
                r = _Region(n, ri, [], [])
                for a in reg.args:
                    v = _Val("barg", a.type, a.position, n, ri, name=a.name)
                    self.vals[a.vid] = v
                    r.args.append(v)
                r.nodes = self._build(reg.ops, r)
                n.regions.append(r)
            nodes.append(n)
        return nodes

    # -- traversal -----------------------------------------------------------------
    def walk(self) -> Iterator[_Node]:
        """All nodes in program order (pre-order: an op before its regions' bodies)."""
        def rec(nodes):
            for n in list(nodes):
                yield n
                for r in n.regions:
                    yield from rec(r.nodes)
        yield from rec(self.body)

    def all_lists(self) -> Iterator[list[_Node]]:
        def rec(nodes):
            yield nodes
            for n in nodes:
                for r in n.regions:
                    yield from rec(r.nodes)
        yield from rec(self.body)


def _iter_ops(ops: list[Op]) -> Iterator[Op]:
    for op in ops:
        yield op
        for r in op.regions:
            yield from _iter_ops(r.ops)


def _producer(v: _Val) -> _Node | None:
    v = v.resolve()
    return v.node if v.kind == "op" else None


def _remove(lists: Iterable[list[_Node]], doomed: set) -> None:
    for nodes in lists:
        nodes[:] = [n for n in nodes if n not in doomed]


class _Normaliser:
    """Per-side rewrites (module docstring lists each rule and why it is sound)."""

    def __init__(self, side: _Side):
        self.s = side

    def run(self) -> None:
        self.asserts()
        self.assumes()
        self.fma()
        self.shapes()
        self.tokens()
        self.index_space()
        self.tensor_views()

    def asserts(self) -> None:
        doomed = {n for n in self.s.walk() if n.opname == "assert"}
        self.s.n_asserts = len(doomed)
        _remove(self.s.all_lists(), doomed)

    def assumes(self) -> None:
        doomed = set()
        for n in self.s.walk():
            if n.opname == "assume" and n.operands and n.results:
                n.results[0].alias = n.operands[-1]
                self.s.assumes.append((n.pre, n.operands[-1]))
                doomed.add(n)
        _remove(self.s.all_lists(), doomed)

    def fma(self) -> None:
        for nodes in self.s.all_lists():
            out = []
            for n in nodes:
                if n.opname != "fma" or len(n.operands) != 3 or not n.results:
                    out.append(n)
                    continue
                self.s.n_fma += 1
                flags = re.sub(r"^\s*%\s*,\s*%\s*,\s*%\s*", "", n.pre).strip()
                pre = "%, %" + (f" {flags}" if flags else "")
                t = n.result_types[0]
                mul = _Node("mulf", pre, n.types, [t], n.operands[:2], [], [], n.parent,
                            n.line, n.text)
                mul.results = [_Val("op", t, 0, mul)]
                addend, opname = n.operands[2], "addf"
                neg = _producer(addend)
                if neg is not None and neg.opname == "negf" and len(neg.operands) == 1:
                    # fma(a, b, -c) is a*b - c: IEEE 754-2008 5.4.1 defines x - y as
                    # x + (-y), so this is exact (the frontend contracts a*b - c this way)
                    addend, opname = neg.operands[0], "subf"
                add = _Node(opname, pre, n.types, [t], [mul.results[0], addend], [], [],
                            n.parent, n.line, n.text)
                add.results = [_Val("op", t, 0, add)]
                self.s.fma_adds.extend((add, mul))     # the sum and the product it fused
                n.results[0].alias = add.results[0]
                out += [mul, add]
            nodes[:] = out

    def shapes(self) -> None:
        """Identity broadcast/reshape and splat canonicalisation (program order, so an
        operand is canonical before its users)."""
        doomed = set()
        for n in self.s.walk():
            if n.opname not in ("broadcast", "reshape") or len(n.operands) != 1 or not n.results:
                continue
            src = n.operands[0].resolve()
            out_t = n.result_types[0]
            if _ws(src.type) == _ws(out_t):
                n.results[0].alias = src
                doomed.add(n)
                continue
            p = _producer(src)
            if p is not None and p.opname == "splat":
                src = p.operands[0].resolve()
            elif not (_rank0(src.type) or _scalar_constant(p)):
                continue
            p = _producer(src)
            if _scalar_constant(p):
                n.opname, n.pre, n.operands = "constant", p.pre, []
            else:
                n.opname, n.pre, n.operands = "splat", "%", [src]
            n.types = out_t
        _remove(self.s.all_lists(), doomed)

    def tokens(self) -> None:
        doomed = set()
        for n in self.s.walk():
            if n.opname != "join_tokens":
                continue
            keep, seen = [], set()
            for v in n.args():
                p = _producer(v)
                if (p is not None and p.opname == "make_token") or id(v) in seen:
                    continue
                seen.add(id(v))
                keep.append(v)
            if len(keep) == 1:
                n.results[0].alias = keep[0]
                doomed.add(n)
            elif not keep:
                n.opname, n.pre, n.operands = "make_token", "", []
            else:
                n.operands, n.pre = keep, ""      # operand count lives in the operand list
        _remove(self.s.all_lists(), doomed)

    def index_space(self) -> None:
        for n in self.s.walk():
            if n.opname == "get_index_space_shape" and n.operands:
                p = _producer(n.operands[0])
                if p is not None and p.opname == "make_partition_view" and p.operands:
                    n.operands = [p.operands[0]] + n.operands[1:]
                    n.types = _ws(re.sub(r"padding_value\s*=\s*[\w.+\-]+\s*,?\s*", "", n.types))

    def tensor_views(self) -> None:
        """Record each make_tensor_view's strides structurally: ("op", operand index) for
        a run-time stride, ("lit", text) for a static one."""
        for n in self.s.walk():
            if n.opname != "make_tensor_view":
                continue
            m = re.search(r"strides=\[([^\]]*)\]", n.pre)
            if not m:
                continue
            before = n.pre[:m.start()].count("%")
            spec, k = [], before
            for item in [x.strip() for x in m.group(1).split(",") if x.strip()]:
                if item == "%":
                    spec.append(("op", k))
                    k += 1
                else:
                    spec.append(("lit", item))
            n.stride_spec = spec


def _rewrite_stride(n: _Node, pos: int, literal: str) -> None:
    """Make stride ``pos`` of tensor view ``n`` the static ``literal`` (drops its operand)."""
    kind, k = n.stride_spec[pos]
    assert kind == "op"
    del n.operands[k]
    new_spec = []
    for j, (kd, x) in enumerate(n.stride_spec):
        if j == pos:
            new_spec.append(("lit", literal))
        elif kd == "op" and x > k:
            new_spec.append(("op", x - 1))
        else:
            new_spec.append((kd, x))
    n.stride_spec = new_spec
    m = re.search(r"strides=\[([^\]]*)\]", n.pre)
    items = ["%" if kd == "op" else x for kd, x in new_spec]
    n.pre = n.pre[:m.start()] + "strides=[" + ", ".join(items) + "]" + n.pre[m.end():]


def _unify_strides(ref: _Side, port: _Side) -> list[tuple[_Node, _Node, int, str, str]]:
    """Stride specialisation across sides.  Tensor views are paired by the entry
    argument (position) they view.  Where one side has a static stride ``L`` for a
    (argument, stride position) and every view of the other side reads it at run time,
    the dynamic side is rewritten to ``L``.  Returns ``(ref_node, port_node, pos,
    literal, specialised_side)`` for each rewrite."""
    def views(side: _Side) -> dict[int, list[_Node]]:
        out: dict[int, list[_Node]] = defaultdict(list)
        for n in side.walk():
            if n.opname == "make_tensor_view" and n.stride_spec is not None and n.operands:
                base = n.operands[0].resolve()
                if base.kind == "arg":
                    out[base.index].append(n)
        return out

    rv, pv = views(ref), views(port)
    notes = []
    for argpos in sorted(set(rv) & set(pv)):
        rnodes, pnodes = rv[argpos], pv[argpos]
        npos = min(len(n.stride_spec) for n in rnodes + pnodes)
        for pos in range(npos):
            rlits = {n.stride_spec[pos][1] for n in rnodes if n.stride_spec[pos][0] == "lit"}
            plits = {n.stride_spec[pos][1] for n in pnodes if n.stride_spec[pos][0] == "lit"}
            if not rlits and len(plits) == 1:
                lit, dyn, label = next(iter(plits)), rnodes, "port"
            elif not plits and len(rlits) == 1:
                lit, dyn, label = next(iter(rlits)), pnodes, "ref"
            else:
                continue
            for n in dyn:
                _rewrite_stride(n, pos, lit)
            notes.append((rnodes[0], pnodes[0], pos, lit, label))
    return notes


# --------------------------------------------------------------------------------------
# Liveness and signatures
# --------------------------------------------------------------------------------------

def _enclosing_op(n: _Node) -> _Node | None:
    return n.parent.owner if n.parent is not None else None


def _effectful(n: _Node, memo: dict) -> bool:
    """Side-effecting op (loads count), or a region op whose body has an effect (or, for
    ``if``, a break/continue that leaves an enclosing loop)."""
    if n in memo:
        return memo[n]
    eff = _is_effectful_name(n.opname)
    if not eff and n.regions:
        for r in n.regions:
            for c in r.nodes:
                if _effectful(c, memo) or (n.opname == "if" and c.opname in ("break", "continue")):
                    eff = True
    memo[n] = eff
    return eff


def _dce(side: _Side, eff_memo: dict) -> None:
    """Remove ops not reachable (backwards through operands, enclosing region ops and
    region terminators) from side effects and the entry's ``return``."""
    live: set = set()
    work: list[_Node] = []

    def mark(n: _Node | None) -> None:
        if n is not None and n not in live:
            live.add(n)
            work.append(n)

    for n in side.walk():
        if _effectful(n, eff_memo) or (n.opname == "return" and n.parent is None) or (
                n.opname in ("break", "continue") and _enclosing_op(n) is not None
                and _enclosing_op(n).opname == "if"):
            mark(n)
    while work:
        n = work.pop()
        for v in n.args():
            mark(v.node if v.kind in ("op", "barg") else None)
        mark(_enclosing_op(n))
        for r in n.regions:
            for c in r.nodes:
                if c.opname in TERMINATORS:
                    mark(c)
    for nodes in side.all_lists():
        nodes[:] = [n for n in nodes if n in live]


def _h(*parts) -> str:
    return hashlib.blake2b(repr(parts).encode(), digest_size=10).hexdigest()


def _canon_types(t: str) -> str:
    """Types as compared: tensor-view strides erased (carried by make_tensor_view)."""
    return _ws(re.sub(r",\s*strides=\[[^\]]*\]", "", t))


class _Sig:
    """Structural signatures of one normalised side."""

    def __init__(self, side: _Side, eff_memo: dict):
        self.side = side
        self.eff = eff_memo
        self.node: dict[_Node, str] = {}
        self.header: dict[_Node, str] = {}
        self.val: dict[_Val, str] = {}
        for a in side.args:
            self.val[a] = _h("arg", a.index, _ws(a.type))
        self._walk(side.body)

    def v(self, v: _Val) -> str:
        return self.val[v.resolve()]

    def operand_sigs(self, n: _Node) -> list[str]:
        sigs = [self.v(x) for x in n.operands]
        if n.opname in COMMUTATIVE and len(sigs) == 2:
            sigs.sort()
        elif n.opname == "join_tokens":
            sigs = sorted(set(sigs))
        return sigs

    def anchor(self, n: _Node) -> bool:
        """Does ``n`` characterise its enclosing region (effects except loads, terminators)?"""
        if n.opname in TERMINATORS:
            return True
        return _effectful(n, self.eff) and not n.opname.startswith("load")

    def _walk(self, nodes: list[_Node]) -> None:
        for n in nodes:
            hdr = _h(n.opname, _ws(n.pre), _canon_types(n.types),
                     tuple(_canon_types(t) for t in n.result_types), tuple(self.operand_sigs(n)))
            self.header[n] = hdr
            parts = []
            for r in n.regions:
                for a in r.args:
                    self.val[a] = _h("barg", hdr, r.index, a.index, _ws(a.type))
                self._walk(r.nodes)
                parts.append(tuple(sorted(self.node[c] for c in r.nodes if self.anchor(c))))
            full = _h(hdr, tuple(parts)) if n.regions else hdr
            self.node[n] = full
            for k, res in enumerate(n.results):
                self.val[res] = _h("res", full, k)

    def multiset(self, n: _Node) -> bool:
        """Compared with multiplicity (effects, terminators of effectful region ops) or
        as a set (pure ops, merged by signature)?"""
        if _effectful(n, self.eff):
            return True
        if n.opname in TERMINATORS:
            owner = _enclosing_op(n)
            return owner is None or self.multiset(owner)
        return False


# --------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------

@dataclass
class DiffResult:
    """Outcome of :func:`diff_ir`.

    ``verdict``: 'PASS' | 'PASS_WITH_NOTES' | 'FAIL'; ``owner``: owner of the finding that
    decided it (None for PASS); ``findings``: verdict.Finding list (critical first);
    ``first_divergence``: the root-cause finding with the smallest reference line, or
    None; ``stats``: op counts per side before/after normalisation, matched/unmatched/
    frontier/propagated counts; ``summary``: one line.
    """

    verdict: str
    owner: str | None
    findings: list[Finding]
    first_divergence: Finding | None
    stats: dict
    summary: str = ""


def _short(text: str, limit: int = 160) -> str:
    t = text.strip()
    return t if len(t) <= limit else t[:limit - 3] + "..."


def _diff_snippet(a: str, b: str, width: int = 70) -> str:
    """``'...x...' vs '...y...'`` around the first difference of two strings."""
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    start = max(0, p - 25)

    def cut(t: str) -> str:
        piece = t[start:start + width]
        return ("..." if start else "") + piece + ("..." if start + width < len(t) else "")
    return f"'{cut(a)}' vs '{cut(b)}'"


def _val_desc(v: _Val) -> str:
    v = v.resolve()
    if v.kind == "arg":
        return f"entry arg #{v.index} ({v.type})"
    if v.kind == "barg":
        return f"block arg #{v.index} of '{v.node.opname}' (line {v.node.line})"
    n = v.node
    return f"'{_short(n.text, 100)}' (line {n.line})"


def _in_reduction(n: _Node) -> bool:
    o = _enclosing_op(n)
    while o is not None:
        if o.opname in ("reduce", "scan"):
            return True
        o = _enclosing_op(o)
    return False


class _SideView:
    """One side prepared for matching: signatures, sets and matched status."""

    def __init__(self, side: _Side, sig: _Sig, label: str):
        self.side, self.sig, self.label = side, sig, label
        self.nodes = list(side.walk())
        self.order = {n: i for i, n in enumerate(self.nodes)}
        self.by_sig: dict[str, list[_Node]] = defaultdict(list)
        for n in self.nodes:
            self.by_sig[sig.node[n]].append(n)
        self.val_sigs = set(sig.val[a] for a in side.args)
        for n in self.nodes:
            self.val_sigs.update(sig.val[r] for r in n.results)
            for r in n.regions:
                self.val_sigs.update(sig.val[a] for a in r.args)
        self.header_sigs = {sig.header[n] for n in self.nodes if n.regions}
        self.matched: set = set()
        self.users: dict[_Node, set] = defaultdict(set)
        for n in self.nodes:
            for v in n.args():
                if v.kind in ("op", "barg") and v.node is not None:
                    self.users[v.node].add(n)
            o = _enclosing_op(n)
            if o is not None:
                self.users[n].add(o)

    def count(self, s: str) -> int:
        nodes = self.by_sig.get(s, [])
        if not nodes:
            return 0
        return len(nodes) if self.sig.multiset(nodes[0]) else 1

    def after_count(self) -> int:
        return sum(self.count(s) for s in self.by_sig)

    def is_leaf(self, n: _Node) -> bool:
        return not n.operands and not n.regions and not self.sig.multiset(n)


def _compare(rv: _SideView, pv: _SideView) -> list[tuple[_Node, _Node]]:
    """Mark matched nodes on both sides; returns matched multiset pairs (for hints)."""
    pairs = []
    for s in set(rv.by_sig) | set(pv.by_sig):
        rn, pn = rv.by_sig.get(s, []), pv.by_sig.get(s, [])
        if not rn or not pn:
            continue
        if rv.sig.multiset(rn[0]) or pv.sig.multiset(pn[0]):
            k = min(len(rn), len(pn))
            rv.matched.update(rn[:k])
            pv.matched.update(pn[:k])
            pairs += list(zip(rn[:k], pn[:k]))
        else:
            rv.matched.update(rn)
            pv.matched.update(pn)
    return pairs


class _Differ:
    """Diff of one entry pair."""

    def __init__(self, ref: _Side, port: _Side, ref_path: str, port_path: str):
        self.ref_path, self.port_path = ref_path, port_path
        self.findings: list[Finding] = []
        self.frontier: list[Finding] = []
        self.stats: dict = {}
        for side in (ref, port):
            _Normaliser(side).run()
        stride_notes = _unify_strides(ref, port)
        memo_r, memo_p = {}, {}
        _dce(ref, memo_r)
        _dce(port, memo_p)
        self.r = _SideView(ref, _Sig(ref, memo_r), "ref")
        self.p = _SideView(port, _Sig(port, memo_p), "port")
        pairs = _compare(self.r, self.p)
        self._entry_signature(ref.entry, port.entry)
        self._frontier()
        self._hints(ref.entry, port.entry, pairs)
        self._notes(ref, port, stride_notes)

    # -- locations ------------------------------------------------------------------
    def rloc(self, n: _Node | None) -> dict | None:
        return None if n is None else loc(self.ref_path, n.line, n.text.strip())

    def ploc(self, n: _Node | None) -> dict | None:
        return None if n is None else loc(self.port_path, n.line, n.text.strip())

    # -- entry ----------------------------------------------------------------------
    def _entry_signature(self, re_: Entry, pe: Entry) -> None:
        rt, pt = [a.type for a in re_.args], [a.type for a in pe.args]
        if [_ws(t) for t in rt] == [_ws(t) for t in pt]:
            return
        diffs = []
        if len(rt) != len(pt):
            diffs.append(f"{len(rt)} args in ref vs {len(pt)} in port")
        for k, (a, b) in enumerate(zip(rt, pt)):
            if _ws(a) != _ws(b):
                diffs.append(f"arg #{k}: {a} vs {b}")
        f = Finding("signature", "critical", "host",
                    "entry signature differs: " + "; ".join(diffs[:6]),
                    loc(self.ref_path, re_.line, re_.text.strip()),
                    loc(self.port_path, pe.line, pe.text.strip()))
        self.findings.append(f)
        self.frontier.append(f)

    # -- unmatched ops --------------------------------------------------------------
    def _is_frontier(self, n: _Node, me: _SideView, other: _SideView) -> bool:
        if n in me.matched:
            return False
        if me.is_leaf(n):
            # a leaf (constant, iota ...) diverges where it is consumed; it is reported
            # itself only when no unmatched op consumes it
            return not any(u not in me.matched for u in me.users.get(n, ()))
        for v in n.args():
            if me.sig.val[v] in other.val_sigs or v.kind == "arg":
                continue
            p = v.node if v.kind == "op" else None
            if p is not None and me.is_leaf(p):
                continue
            return False
        if n.regions and me.sig.header[n] in other.header_sigs:
            return False      # same header: the divergence is inside the body
        return True

    def _explained(self, me: _SideView, front: list[_Node]) -> set:
        """Frontier ops and everything downstream of them."""
        explained = set(front)
        for n in front:
            explained |= self._downstream(n, me)
        return explained

    def _unexplained(self, me: _SideView, front: list[_Node], explained: set,
                     other: _SideView, other_explained: set) -> list[_Node]:
        """Add the unmatched ops that no frontier op explains (not downstream of one on
        this side, and their closest counterpart not explained on the other side), e.g.
        a loop whose header and body ops all match but whose body has a different set
        of effects (a loop-invariant store moved into or out of it).  Of those, the ones
        with no unexplained op upstream (operands, body) are root causes too."""
        rest = [n for n in me.nodes if n not in me.matched and n not in explained
                and not me.is_leaf(n) and self._candidate(n, me, other) not in other_explained]
        rest_set = set(rest)

        def upstream(n: _Node) -> Iterator[_Node]:
            for v in n.args():
                if v.kind in ("op", "barg") and v.node is not None:
                    yield v.node
            for r in n.regions:
                yield from r.nodes
        roots = [n for n in rest if not any(u in rest_set for u in upstream(n))]
        if rest and not roots:          # a cycle cannot occur; keep a report anyway
            roots = rest[:1]
        return sorted(set(front) | set(roots), key=lambda n: me.order[n])

    def _downstream(self, n: _Node, me: _SideView) -> set:
        seen, work = set(), [n]
        while work:
            x = work.pop()
            for u in me.users.get(x, ()):
                if u not in me.matched and u not in seen:
                    seen.add(u)
                    work.append(u)
        return seen

    def _candidate(self, n: _Node, me: _SideView, other: _SideView) -> _Node | None:
        """Closest op on the other side, in this order of preference:

        1. an unmatched op of the same name sharing an operand (scored by equal
           attributes, types, result types, shared operands, nearby relative position);
        2. an unmatched op of another name reading some of the same operands (the other
           side did something else with the same inputs, e.g. subf for addf);
        3. an unmatched, then a matched op of the same name (scored as in 1.);
        4. the nearest unmatched op by relative position; None if everything matched.
        """
        rel = me.order[n] / max(1, len(me.nodes))
        my_ops = set(me.sig.operand_sigs(n))

        def dist(c: _Node) -> float:
            return abs(other.order[c] / max(1, len(other.nodes)) - rel)

        def score(c: _Node) -> float:
            sc = 10.0 if _ws(c.pre) == _ws(n.pre) else 0.0
            sc += 10 if _canon_types(c.types) == _canon_types(n.types) else 0
            sc += 10 if [_canon_types(t) for t in c.result_types] == \
                [_canon_types(t) for t in n.result_types] else 0
            sc += 10 * len(my_ops & set(other.sig.operand_sigs(c))) / max(1, len(my_ops))
            return sc - 5 * dist(c)

        def shares(c: _Node) -> int:
            return len(my_ops & set(other.sig.operand_sigs(c)))

        unmatched = [c for c in other.nodes if c not in other.matched]
        same = [c for c in unmatched if c.opname == n.opname and (shares(c) or not my_ops)]
        if same:
            return max(same, key=score)
        sharing = [c for c in unmatched if c.opname not in TERMINATORS and shares(c)]
        if sharing:
            return max(sharing, key=lambda c: (shares(c), -dist(c)))
        same = [c for c in unmatched if c.opname == n.opname]
        if same:
            return max(same, key=score)
        same = [c for c in other.nodes if c.opname == n.opname]
        if same:
            return max(same, key=score)
        rest = [c for c in unmatched if c.opname not in TERMINATORS]
        return min(rest, key=dist) if rest else None

    def _explain(self, a: _Node, a_view: _SideView, b: _Node | None, b_view: _SideView) -> tuple[str, bool]:
        """Describe how ``a`` differs from candidate ``b``.  Returns (text, only_constants)
        where only_constants says the ops agree except for constant operands."""
        if b is None:
            return "no counterpart", False
        if a.opname != b.opname:
            shared = [v for v in a.args() if a_view.sig.v(v) in set(b_view.sig.operand_sigs(b))]
            how = (f"; the {b_view.label} feeds the same operand ({_val_desc(shared[0])}) into "
                   f"'{b.opname}' (line {b.line}) instead" if shared else
                   f"; nearest unmatched {b_view.label} op is '{b.opname}' (line {b.line})")
            return f"no '{a.opname}' with these inputs in the {b_view.label}" + how, False
        out = []
        if _ws(a.pre) != _ws(b.pre):
            out.append("attributes " + _diff_snippet(_ws(a.pre), _ws(b.pre)))
        if _canon_types(a.types) != _canon_types(b.types):
            out.append("types " + _diff_snippet(_canon_types(a.types), _canon_types(b.types)))
        asig, bsig = a_view.sig.operand_sigs(a), b_view.sig.operand_sigs(b)
        only_const = not out
        if len(asig) != len(bsig):
            out.append(f"{len(asig)} operands vs {len(bsig)}")
            only_const = False
        else:
            avals, bvals = a.args(), b.args()
            pairs = list(enumerate(zip(avals, bvals)))
            if a.opname in COMMUTATIVE and len(avals) == 2:
                # unordered: drop the operands both have, pair up what is left
                rest_b = list(bvals)
                rest_a = []
                for x in avals:
                    same = [y for y in rest_b if b_view.sig.v(y) == a_view.sig.v(x)]
                    if same:
                        rest_b.remove(same[0])
                    else:
                        rest_a.append(x)
                pairs = [(avals.index(x), (x, y)) for x, y in zip(rest_a, rest_b)]
            for k, (x, y) in pairs:
                if a_view.sig.v(x) == b_view.sig.v(y):
                    continue
                px, py = _producer(x), _producer(y)
                if not (px is not None and py is not None and px.opname == py.opname == "constant"):
                    only_const = False
                out.append(f"operand #{k}: {a_view.label} {_val_desc(x)} vs "
                           f"{b_view.label} {_val_desc(y)}")
        if a.regions and a_view.sig.header[a] == b_view.sig.header[b]:
            a_anchor = Counter(a_view.sig.node[c] for r in a.regions for c in r.nodes if a_view.sig.anchor(c))
            b_anchor = Counter(b_view.sig.node[c] for r in b.regions for c in r.nodes if b_view.sig.anchor(c))
            def excess(x: _Node, view: _SideView, surplus: Counter) -> list[_Node]:
                out_ = []
                for c in reversed([c for r in x.regions for c in r.nodes if view.sig.anchor(c)]):
                    if surplus[view.sig.node[c]] > 0:
                        surplus[view.sig.node[c]] -= 1
                        out_.append(c)
                return out_[::-1]
            extra = excess(a, a_view, a_anchor - b_anchor)
            missing = excess(b, b_view, b_anchor - a_anchor)
            desc = "same header, different body effects"
            if extra:
                desc += f"; only in the {a_view.label} body: " + ", ".join(
                    f"'{c.opname}' (line {c.line})" for c in extra[:4])
            if missing:
                desc += f"; only in the {b_view.label} body: " + ", ".join(
                    f"'{c.opname}' (line {c.line})" for c in missing[:4])
            out.append(desc)
            only_const = False
        if not out:
            out.append("same op, different multiplicity")
            only_const = False
        return "; ".join(out), only_const and bool(asig)

    def _category(self, n: _Node, only_const: bool) -> str:
        if _in_reduction(n):
            return "reduction"
        if only_const or n.opname == "constant":
            return "constant"
        return category_of(n.opname)

    def _frontier(self) -> None:
        """Find the root-cause ops on both sides and report them (paired where the
        closest counterpart of a ref root cause is a port root cause)."""
        r, p = self.r, self.p

        def dedupe(nodes, view):            # report each pure signature once
            seen, out = set(), []
            for n in nodes:
                s = view.sig.node[n]
                if view.sig.multiset(n) or s not in seen:
                    seen.add(s)
                    out.append(n)
            return out

        r_front = [n for n in r.nodes if self._is_frontier(n, r, p)]
        p_front = [n for n in p.nodes if self._is_frontier(n, p, r)]
        r_expl, p_expl = self._explained(r, r_front), self._explained(p, p_front)
        r_front = self._unexplained(r, r_front, r_expl, p, p_expl)
        p_front = self._unexplained(p, p_front, p_expl, r, r_expl)
        r_front, p_front = dedupe(r_front, r), dedupe(p_front, p)
        p_front_set = set(p_front)
        used_port: set = set()
        for n in r_front:
            c = self._candidate(n, r, p)
            text, only_const = self._explain(n, r, c, p)
            ds = self._downstream(n, r)
            if c is not None and c in p_front_set and c not in used_port:
                used_port.add(c)
                dp = self._downstream(c, p)
                extra = f"; {len(ds)} ref / {len(dp)} port downstream ops diverge as a consequence"
            else:
                extra = f"; {len(ds)} downstream ref ops diverge as a consequence"
            msg = f"ref '{n.opname}' (line {n.line}) has no match in the port: {text}{extra}"
            cat = self._category(n, only_const)
            if (c is not None and c in used_port and c.opname != n.opname
                    and self._category(c, False) == "cast"):
                # the port inserted a conversion where the reference has none: that is the
                # root cause, not the reference op it displaced
                cat = "cast"
            f = Finding(cat, "critical", "kernel", msg, self.rloc(n), self.ploc(c))
            self.findings.append(f)
            self.frontier.append(f)
        for n in p_front:
            if n in used_port:
                continue
            c = self._candidate(n, p, r)
            text, only_const = self._explain(n, p, c, r)
            ds = self._downstream(n, p)
            msg = (f"port '{n.opname}' (line {n.line}) has no match in the reference: {text}; "
                   f"{len(ds)} downstream port ops diverge as a consequence")
            f = Finding(self._category(n, only_const), "critical", "kernel", msg,
                        self.rloc(c), self.ploc(n))
            self.findings.append(f)
            self.frontier.append(f)
        un_r = dedupe([n for n in r.nodes if n not in r.matched], r)
        un_p = dedupe([n for n in p.nodes if n not in p.matched], p)
        self.stats.update({
            "unmatched": {"ref": len(un_r), "port": len(un_p)},
            "frontier": {"ref": len(r_front), "port": len(p_front)},
            "propagated": {"ref": len(un_r) - len(r_front), "port": len(un_p) - len(p_front)},
        })

    # -- hints ----------------------------------------------------------------------
    def _hints(self, re_: Entry, pe: Entry, pairs) -> None:
        if re_.hints != pe.hints:
            self.findings.append(Finding(
                "hint", "warn", "kernel",
                f"entry optimization hints differ: ref '{re_.hints or 'none'}' vs port "
                f"'{pe.hints or 'none'}'",
                loc(self.ref_path, re_.line, re_.text.strip()),
                loc(self.port_path, pe.line, pe.text.strip())))
        for a, b in sorted(pairs, key=lambda ab: ab[0].line or 0):
            if a.hints != b.hints:
                self.findings.append(Finding(
                    "hint", "warn", "kernel",
                    f"'{a.opname}' hints differ: ref '{a.hints or 'none'}' vs port "
                    f"'{b.hints or 'none'}'", self.rloc(a), self.ploc(b)))

    # -- info notes -----------------------------------------------------------------
    def _notes(self, ref: _Side, port: _Side, stride_notes) -> None:
        if ref.n_asserts or port.n_asserts:
            self.findings.append(Finding(
                "control_flow", "info", "compiler",
                f"removed assert ops (bounds checks, no value computed): ref {ref.n_asserts}, "
                f"port {port.n_asserts}"))
        # where (not only how many) fmas were contracted: the expanded add's signature names
        # the dataflow it sits in
        rf = Counter(self.r.sig.node[n] for n in ref.fma_adds if n in self.r.sig.node)
        pf = Counter(self.p.sig.node[n] for n in port.fma_adds if n in self.p.sig.node)
        if ref.n_fma != port.n_fma or rf != pf:
            # Not only a spelling: an fma rounds once, mulf+addf twice, and tileiras does not
            # contract every unfused pair (measured on gelu f32, sm_90: 56 FFMA in the
            # reference's SASS, 48 FFMA + 8 more FMUL/FADD in an unfused port). Same dataflow,
            # so the graphs match after expansion; the numerics may differ by one rounding.
            self.findings.append(Finding(
                "math", "warn", "kernel",
                f"fma contraction differs: ref has {ref.n_fma} fma, port {port.n_fma}"
                f"{'' if ref.n_fma != port.n_fma else ' at other places'}; the "
                f"graphs match after expanding fma to mulf+addf, but fma rounds once where "
                f"mulf+addf rounds twice (results may differ by one rounding)"))
        ra = sorted(_h(pre, self.r.sig.v(v)) for pre, v in ref.assumes if v.resolve() in self.r.sig.val)
        pa = sorted(_h(pre, self.p.sig.v(v)) for pre, v in port.assumes if v.resolve() in self.p.sig.val)
        only_r = sum((Counter(ra) - Counter(pa)).values())
        only_p = sum((Counter(pa) - Counter(ra)).values())
        # An assume is a promise to the optimizer. `bounded<0, ?>` (non-negative) holds for every
        # block id, shape and stride both frontends assume it on; any other predicate present on
        # one side only (a divisibility, an upper bound) changes what the compiler may do: if it
        # is false at run time that side's behaviour is undefined, if it is missing code may be
        # slower. Warn, with the predicate.
        trivial = re.compile(r"^\s*bounded<\s*0\s*,\s*\?\s*>")
        for side, mine, other, lst in (("port", pa, ra, port.assumes), ("ref", ra, pa, ref.assumes)):
            extra = Counter(mine) - Counter(other)
            view = self.p if side == "port" else self.r
            preds = {}
            for pre, v in lst:
                if v.resolve() in view.sig.val:
                    preds.setdefault(_h(pre, view.sig.v(v)), pre)
            for hsh in extra:
                pre = preds.get(hsh, "")
                if pre and not trivial.match(pre):
                    self.findings.append(Finding(
                        "hint", "warn", "kernel",
                        f"only the {side} assumes `{pre.split(',')[0].strip()}` on a value: if it "
                        f"does not hold at run time that side is undefined; if it does, the "
                        f"other side may be slower"))
        if only_r or only_p:
            self.findings.append(Finding(
                "hint", "info", "compiler",
                f"assume ops are transparent (optimizer facts only): {only_r} only in ref, "
                f"{only_p} only in port (ref {len(ref.assumes)}, port {len(port.assumes)} in all)"))
        for rn, pn, pos, lit, side in stride_notes:
            # a unit stride is the contiguous layout every host passes; any other static
            # stride is unusual enough to deserve a look
            self.findings.append(Finding(
                "memory", "info" if lit == "1" else "warn", "host",
                f"{'port' if side == 'port' else 'ref'} specialises stride #{pos} of the tensor "
                f"view of entry arg #{rn.operands[0].resolve().index} to {lit}; the other side "
                f"reads it at run time. Equal only when the host guarantees that stride.",
                self.rloc(rn), self.ploc(pn)))


def _severity_rank(f: Finding) -> int:
    return {"critical": 0, "warn": 1, "info": 2}[f.severity]


def _line_key(f: Finding) -> tuple:
    if f.ref and f.ref.get("line") is not None:
        return (f.ref["line"], 0)
    if f.port and f.port.get("line") is not None:
        return (f.port["line"], 1)
    return (10 ** 9, 2)


def diff_ir(ref_text: str, port_text: str, ref_path: str = "ref.tileir",
            port_path: str = "port.tileir") -> DiffResult:
    """Compare a reference and a port Tile IR text (see the module docstring).

    Args:
        ref_text / port_text: tileirdisasm output of the cuTile Python reference and of
            the cuTile Rust port.
        ref_path / port_path: names used in finding locations.
    Returns:
        :class:`DiffResult`.  FAIL if any critical finding, PASS_WITH_NOTES if any warn,
        else PASS.
    Raises:
        IRParseError: either text is malformed (the error names that file and line).
    """
    ref_mod = parse_tileir(ref_text, ref_path)
    port_mod = parse_tileir(port_text, port_path)
    findings: list[Finding] = []
    frontier: list[Finding] = []
    stats: dict = {"entries": {"ref": len(ref_mod.entries), "port": len(port_mod.entries)},
                   "ops_before": {"ref": 0, "port": 0}, "ops_after": {"ref": 0, "port": 0},
                   "matched": 0, "unmatched": {"ref": 0, "port": 0},
                   "frontier": {"ref": 0, "port": 0}, "propagated": {"ref": 0, "port": 0},
                   "asserts_removed": {"ref": 0, "port": 0}, "assumes": {"ref": 0, "port": 0},
                   "fma": {"ref": 0, "port": 0}}
    if len(ref_mod.entries) != len(port_mod.entries):
        f = Finding("signature", "critical", "host",
                    f"{len(ref_mod.entries)} entries in ref vs {len(port_mod.entries)} in port",
                    loc(ref_path, ref_mod.entries[0].line, ref_mod.entries[0].text.strip()),
                    loc(port_path, port_mod.entries[0].line, port_mod.entries[0].text.strip()))
        findings.append(f)
        frontier.append(f)
    rg = sorted(_ws(g.attrs) for g in ref_mod.globals)
    pg = sorted(_ws(g.attrs) for g in port_mod.globals)
    if rg != pg:
        f = Finding("memory", "critical", "kernel", "module-level globals differ",
                    loc(ref_path, ref_mod.globals[0].line if ref_mod.globals else None),
                    loc(port_path, port_mod.globals[0].line if port_mod.globals else None))
        findings.append(f)
        frontier.append(f)
    for re_, pe in zip(ref_mod.entries, port_mod.entries):
        rs, ps = _Side(re_, ref_path), _Side(pe, port_path)
        d = _Differ(rs, ps, ref_path, port_path)
        findings += d.findings
        frontier += d.frontier
        for key, fn in (("ops_before", lambda s, v: s.n_ops_before),
                        ("ops_after", lambda s, v: v.after_count()),
                        ("asserts_removed", lambda s, v: s.n_asserts),
                        ("assumes", lambda s, v: len(s.assumes)),
                        ("fma", lambda s, v: s.n_fma)):
            stats[key]["ref"] += fn(rs, d.r)
            stats[key]["port"] += fn(ps, d.p)
        for key in ("unmatched", "frontier", "propagated"):
            for side in ("ref", "port"):
                stats[key][side] += d.stats[key][side]
        stats["matched"] += sum(min(d.r.count(s), d.p.count(s)) for s in d.r.by_sig)
    findings.sort(key=lambda f: (_severity_rank(f), _line_key(f)))
    first = min(frontier, key=_line_key) if frontier else None
    crit = [f for f in findings if f.severity == "critical"]
    warn = [f for f in findings if f.severity == "warn"]
    if crit:
        verdict, owner = "FAIL", (first.owner if first else crit[0].owner)
    elif warn:
        verdict, owner = "PASS_WITH_NOTES", warn[0].owner
    else:
        verdict, owner = "PASS", None
    summary = _summary(verdict, stats, crit, warn, first)
    return DiffResult(verdict, owner, findings, first, stats, summary)


def _summary(verdict: str, stats: dict, crit, warn, first: Finding | None) -> str:
    if verdict == "FAIL":
        cats = defaultdict(int)
        for f in crit:
            cats[f.category] += 1
        where = ""
        if first is not None:
            lc = first.ref or first.port
            where = f"; first divergence at {lc['file']}:{lc['line']} ({first.category})"
        prop = stats["propagated"]["ref"] + stats["propagated"]["port"]
        return (f"FAIL: {len(crit)} divergence(s) ("
                + ", ".join(f"{v} {k}" for k, v in sorted(cats.items()))
                + f"), {prop} propagated op(s){where}")
    tail = f" ({len(warn)} warning(s): {', '.join(sorted({f.category for f in warn}))})" if warn else ""
    return (f"{verdict}: {stats['matched']} op signature(s) match after normalisation "
            f"(ref {stats['ops_before']['ref']} -> {stats['ops_after']['ref']} ops, port "
            f"{stats['ops_before']['port']} -> {stats['ops_after']['port']}){tail}")


def _attach_sources(res: DiffResult, ref_text: str, port_text: str) -> None:
    """Add ``source`` (``file:line`` of kernel.py / the generated .rs) to the IR locations of
    the findings, from the debug info of ``tileirdisasm -g`` text (see :mod:`ir_locs`)."""
    srcs = {"ref": op_sources(ref_text), "port": op_sources(port_text)}
    found = list(res.findings) + ([res.first_divergence] if res.first_divergence else [])
    for f in found:
        for side in ("ref", "port"):
            where = getattr(f, side)
            if where and where.get("line") in srcs[side] and "source" not in where:
                file, line = srcs[side][where["line"]]
                where["source"] = f"{file}:{line}"


def run(ref_path, port_path, out_json, op: str, kernel: str | None = None,
        variant: str | None = None, attempt: int = 1) -> dict:
    """Stage entry point: diff two IR files and write the ``ir_diff`` verdict JSON.

    ``details`` = ``{"first_divergence": finding dict | None, "stats": {...}}``,
    ``artifacts`` = ``{"ref": ref_path, "port": port_path}``.  A malformed or missing
    input gives verdict ERROR (owner "tool", a finding naming ``file:line``) instead of
    raising.  Returns the written verdict document.
    """
    ref_path, port_path = str(ref_path), str(port_path)
    artifacts = {"ref": ref_path, "port": port_path}
    try:
        ref_text = Path(ref_path).read_text()
        port_text = Path(port_path).read_text()
        res = diff_ir(ref_text, port_text, ref_path, port_path)
    except IRParseError as exc:
        where = loc(exc.path, exc.line, exc.text.strip())
        side_ref = exc.path == ref_path
        f = Finding("input", "critical", "tool", f"cannot parse Tile IR: {exc}",
                    where if side_ref else None, None if side_ref else where)
        v = Verdict(stage="ir_diff", op=op, kernel=kernel, variant=variant, verdict="ERROR",
                    owner="tool", attempt=attempt, summary=f"ERROR: {exc}", findings=[f],
                    artifacts=artifacts, details={"first_divergence": asdict(f), "stats": {}})
        return write(v, out_json)
    except OSError as exc:
        f = Finding("input", "critical", "tool", f"cannot read IR file: {exc}",
                    loc(getattr(exc, "filename", None) or ref_path, None), None)
        v = Verdict(stage="ir_diff", op=op, kernel=kernel, variant=variant, verdict="ERROR",
                    owner="tool", attempt=attempt, summary=f"ERROR: {exc}", findings=[f],
                    artifacts=artifacts, details={"first_divergence": None, "stats": {}})
        return write(v, out_json)
    _attach_sources(res, ref_text, port_text)
    v = Verdict(stage="ir_diff", op=op, kernel=kernel, variant=variant, verdict=res.verdict,
                owner=res.owner, attempt=attempt, summary=res.summary, findings=res.findings,
                artifacts=artifacts,
                details={"first_divergence": asdict(res.first_divergence) if res.first_divergence else None,
                         "stats": res.stats})
    return write(v, out_json)
