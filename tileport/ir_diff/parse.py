"""Step 1: parse tileirdisasm text into :class:`Module` / :class:`Entry` / :class:`Op` /
:class:`Region` (SSA operands resolved against the visible scope; hints split off)."""
from __future__ import annotations

import collections
import dataclasses
import functools
import re
from dataclasses import dataclass, field

from .ops import KNOWN_OPS, REGION_OPS


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
_RESULT_NAME_RE = re.compile(r"^%(" + _NAME + r")(?::(\d+))?$")
_DEF_AFTER_RE = re.compile(r"\s*=(?!=)")
_IN_AFTER_RE = re.compile(r"\s+in\b")
_EMPTY_ITEM_RE = re.compile(r",\s*,")
_HINTS_KEY_RE = re.compile(r"optimization_hints\s*=\s*<")
_BARE_HINT_RE = re.compile(
    r"\b(latency|allow_tma|num_cta_in_cga|num_ctas|occupancy)\s*=\s*([\w.\-]+)")


def _mask_strings(s: str) -> str:
    """Replace the contents of "..." literals by ``_`` (same length), so that SSA-looking
    text and brackets inside strings are ignored by the scanners."""
    if '"' not in s:
        return s
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


_BRACKET_RE = re.compile(r"->|[<(\[{>)\]}]")


@functools.lru_cache(maxsize=64)
def _levels(masked: str) -> tuple[int, ...]:
    """Bracket nesting level of every char of a string-masked text: a bracket char gets
    the level it opens/closes at, other chars the level they sit at.  ``->`` is an arrow,
    not a closing angle bracket.  The level may go negative on unbalanced input. Kept for
    the last texts asked (an op's text is scanned several times)."""
    n = len(masked)
    out, depth, prev = [0] * n, 0, 0
    for m in _BRACKET_RE.finditer(masked):
        i, ch = m.start(), m.group()
        if i > prev:
            out[prev:i] = [depth] * (i - prev)
        if ch == "->":
            out[i] = out[i + 1] = depth
            prev = i + 2
            continue
        if ch in "<([{":
            out[i] = depth
            depth += 1
        else:
            depth -= 1
            out[i] = depth
        prev = i + 1
    if n > prev:
        out[prev:] = [depth] * (n - prev)
    return tuple(out)


def _balanced(s: str) -> bool:
    """Are the brackets of ``s`` (strings ignored, ``->`` not a bracket) balanced?"""
    masked = _mask_strings(s)
    if not _BRACKET_RE.search(masked):
        return True
    if min(_levels(masked)) < 0:
        return False
    # a '>' right after '-' is an arrow's head (two arrows never share characters)
    closing = sum(masked.count(c) for c in ">)]}") - masked.count("->")
    opening = sum(masked.count(c) for c in "<([{")
    return opening == closing


def _split_top(s: str, sep: str = ",") -> list[str]:
    """Split at top-level ``sep`` characters (not inside <>, (), [], {} or strings); ``sep`` is
    one character."""
    if len(sep) != 1:
        raise ValueError(f"_split_top splits at one character, not {sep!r}")
    masked = _mask_strings(s)
    lv = _levels(masked) if _BRACKET_RE.search(masked) else None
    parts, start = [], 0
    i = masked.find(sep)
    while i >= 0:
        if lv is None or lv[i] == 0:
            parts.append(s[start:i])
            start = i + 1
        i = masked.find(sep, i + 1)
    parts.append(s[start:])
    return [p.strip() for p in parts if p.strip()]


def _find_top(s: str, token: str, last: bool = False) -> int:
    """Index of the first (or last) top-level occurrence of ``token`` in ``s``, or -1."""
    masked = _mask_strings(s)
    i = masked.find(token) if token else -1
    if i < 0:
        return -1
    lv = _levels(masked)
    found = -1
    while i >= 0:
        if lv[i] == 0:
            if not last:
                return i
            found = i
        i = masked.find(token, i + 1)
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
# a trailing debug location ``loc(...)`` (one level of nested parentheses), before an optional '{'
_LOC_SUFFIX_RE = re.compile(r"\s+loc\((?:[^()]|\([^()]*\))*\)\s*(\{?)$")


def _keep_brace(m: re.Match) -> str:
    return " " + m.group(1)


_SPACES_RE = re.compile(r"\s+")
_EQ_RE = re.compile(r"\s*=\s*")
_COMMA_RE = re.compile(r"\s*,\s*")


def _canon_spacing(part: str) -> str:
    return _COMMA_RE.sub(", ", _EQ_RE.sub("=", _SPACES_RE.sub(" ", part)))


@functools.lru_cache(maxsize=4096)
def _ws(s: str) -> str:
    """Canonical spacing: single spaces, none around ``=``, ``", "`` after commas;
    string literals are kept verbatim. Kept for the last texts asked (types repeat)."""
    if '"' not in s:
        return _canon_spacing(s).strip()
    out, last = [], 0
    for m in _STRING_RE.finditer(s):
        out += [_canon_spacing(s[last:m.start()]), m.group(0)]
        last = m.end()
    out.append(_canon_spacing(s[last:]))
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
    text = _EMPTY_ITEM_RE.sub(",", text)
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
        self._clean: dict[int, str] = {}  # line index -> its text without the debug location
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
            s = self._clean.get(self.i)
            if s is None:
                s = self.lines[self.i - 1].strip()
                if "loc(" in s:
                    s = _LOC_SUFFIX_RE.sub(_keep_brace, s).strip()
                self._clean[self.i] = s
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
                rm = _RESULT_NAME_RE.match(part)
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
            is_def = (_DEF_AFTER_RE.match(mheader, sm.end()) is not None
                      or (opname == "for" and not mheader[:sm.start()].strip()
                          and _IN_AFTER_RE.match(mheader, sm.end()) is not None))
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
        a :class:`Module`; every op's operands are resolved against the visible scope. The
        last modules parsed are kept by text and handed out again, under ``path``, for the same
        text (the run-time IR diff reads each text up to six times, and one compiled Tile IR is
        the text of several perf shapes' cases, each under its own path): callers never modify a
        Module.
    Raises:
        IRParseError: ``path:line: cause`` for unbalanced braces, undefined or redefined
        SSA values, unknown ops / garbage lines, malformed headers.
    """
    path = str(path)
    mod = _KEPT.get(text)
    if mod is None:
        mod = _Parser(text, path).parse()       # an error is never kept: it names this path
        _KEPT[text] = mod
        if len(_KEPT) > _KEEP:
            _KEPT.popitem(last=False)
    else:
        _KEPT.move_to_end(text)
    return mod if mod.path == path else dataclasses.replace(mod, path=path)


# the last modules parsed, by text (the path is only the Module's name): least recently used out
_KEEP = 64
_KEPT: collections.OrderedDict[str, Module] = collections.OrderedDict()
