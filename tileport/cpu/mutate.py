"""Mutants of an accepted cuTile Rust port: the mistakes a human or an LLM makes when porting
(issue 36), written into the port's source, one edit per mutant.

Each operator (:data:`OPERATORS`) is construct-aware: it matches one cutile call or Rust form on
one line of an entry's body (``load_view_tko``'s latency and TMA arguments, ``divi``'s rounding,
``mma``'s operands, a ``for`` range, ...) and rewrites that line only, so every other line and
every line number stays (the IR diff's locations still name the same lines). A mutant may fail to
compile (rustc's check or cutile's compiler): the study counts those apart
(:mod:`tileport.cpu.mutation`).

Sampling is deterministic: candidates are deduplicated by (kind, line text, edit) across the
entries of a multi-entry port, then ``random.Random(f"{seed}:{kernel}")`` draws at most
``per_kind`` per kind and ``max_mutants`` in all.
"""
from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass

#: no port writes an ``assume``: cutile's launcher adds them from the launch facts (cutile 0.5.0
#: ``specialization.rs``), so the issue's "dropped assume" has no site in a port's source; it is
#: the run-time pair's job (:func:`tileport.ir_diff.entry_facts.diff_runtime_pair`)
NO_SITE = {"assume": "no port writes an assume: cutile's launcher derives them (specialization.rs)"}


@dataclass(frozen=True)
class Mutant:
    """One edit of a port: ``line`` (1-based) of the port's .rs, ``before`` -> ``after``, in
    entry ``entry``."""

    id: str
    kind: str
    line: int
    entry: str
    before: str
    after: str
    description: str

    def as_dict(self) -> dict:
        return asdict(self)


def _sub(pattern: str, repl, desc: str):
    """An operator from a regex: one candidate per match (``repl``: str or fn(match) -> str)."""
    rx = re.compile(pattern)

    def op(line: str):
        for m in rx.finditer(line):
            new = m.expand(repl) if isinstance(repl, str) else repl(m)
            if new is not None and new != m.group(0):
                yield line[:m.start()] + new + line[m.end():], desc.format(old=m.group(0).strip(), new=new.strip())
    return op


def _last_digit(m: re.Match) -> str:
    num, suf = m.group("num"), m.group("suf")
    if num.rstrip("0.") in ("", "-", "1", "-1"):     # 0, 1: identities, changed by other kinds
        return None
    d = int(num[-1])
    return f"{num[:-1]}{(d + 1) % 10 if d != 9 else 8}{suf}"


def _loop_end(m: re.Match) -> str:
    return f"for {m['v']} in {m['a']}..({m['b']} - 1i32) {{"


def _loop_start(m: re.Match) -> str:
    return f"for {m['v']} in ({m['a']} + 1i32)..{m['b']} {{"


_FOR = r"for (?P<v>\w+) in (?P<a>\w+)\.\.(?P<b>\w+) \{"

#: (kind, operator) -- each operator yields (new line, one-line description) for a line
OPERATORS = [
    # masks: an off-by-one bound check, a dropped gather/scatter mask
    ("mask", _sub(r"predicate::LessThan\b(?!OrEqual)", "predicate::LessThanOrEqual",
                  "bound check `<` became `<=` ({old} -> {new})")),
    ("mask", _sub(r"predicate::GreaterThanOrEqual\b", "predicate::GreaterThan", "bound check `>=` became `>`")),
    ("mask", _sub(r"(load_ptr_tko(?:_padded)?\([^,]+, [^,]+, [^,]+, )Some\(\w+\)", r"\1None",
                  "gather mask dropped")),
    ("mask", _sub(r"(store_ptr_tko\([^,]+, [^,]+, [^,]+, [^,]+, )Some\(\w+\)", r"\1None", "scatter mask dropped")),
    # padding value of a view or a padded gather
    ("padding", _sub(r"padding::Zero\b", "padding::NegInf", "padding value zero became -inf")),
    ("padding", _sub(r"padding::NegInf\b", "padding::Zero", "padding value -inf became zero")),
    ("padding", _sub(r"(load_ptr_tko_padded\([^,]+, [^,]+, [^,]+, [^,]+, )Some\(\w+\)", r"\1None",
                     "gather padding value dropped")),
    # integer division: cdiv <-> floor, and Rust-style truncation
    ("cdiv_floor", _sub(r"(divi\(.*)rounding::PositiveInf", r"\1rounding::NegativeInf", "cdiv became floor division")),
    ("cdiv_floor", _sub(r"(divi\(.*)rounding::NegativeInf", r"\1rounding::PositiveInf", "floor division became cdiv")),
    ("int_div_trunc", _sub(r"(divi\(.*)rounding::(?:NegativeInf|PositiveInf)", r"\1rounding::Zero",
                           "integer division rounds toward zero (Rust `/`) instead")),
    # operands: swapped matmul operands, a tile index pair swapped (a missing transpose), a - b
    ("operand_swap", _sub(r"mma\((\w+), (\w+), ", r"mma(\2, \1, ", "mma operands swapped")),
    ("operand_swap", _sub(r"= (\w+) - (\w+);", r"= \2 - \1;", "operands of a subtraction swapped")),
    ("operand_swap", _sub(r"divf\((\w+), (\w+), ", r"divf(\2, \1, ", "operands of a division swapped")),
    ("transpose", _sub(r"(load_view_tko\(&\w+, )\[(\w+), (\w+)\]", r"\1[\3, \2]",
                       "tile index of a 2-D load swapped (a missing transpose)")),
    ("transpose", _sub(r"= permute\((\w+), const_array!\[[^\]]*\]\);", r"= \1;", "transpose (permute) dropped")),
    # reductions: axis, combiner, identity of a running accumulator
    ("reduction_axis", _sub(r"(reduce_(?:sum|max|min|prod)\(\w+, )0\)", r"\g<1>1)", "reduction axis 0 became 1")),
    ("reduction_axis", _sub(r"(reduce_(?:sum|max|min|prod)\(\w+, )1\)", r"\g<1>0)", "reduction axis 1 became 0")),
    ("reduction_op", _sub(r"\breduce_max\(", "reduce_min(", "max reduction became min")),
    ("reduction_op", _sub(r"\breduce_sum\(", "reduce_max(", "sum reduction became max")),
    ("arith_op", _sub(r"\bmax_tile\(", "min_tile(", "max became min")),
    ("arith_op", _sub(r"= (\w+) \+ (\w+);", r"= \1 - \2;", "an addition became a subtraction")),
    # indices: a tile index one off, an extent read from the wrong axis
    ("index_offset", _sub(r"((?:load_view_tko|store_view_tko_mut)\(&(?:mut )?\w+, (?:\w+, )?)\[(\w+)([,\]])",
                          r"\1[(\2 + 1i32)\3", "tile index off by one")),
    ("shape_axis", _sub(r"get_shape_dim\((\w+)\.shape\(\), 0i32\)", r"get_shape_dim(\1.shape(), 1i32)",
                        "extent read from axis 1 instead of 0")),
    ("shape_axis", _sub(r"get_shape_dim\((\w+)\.shape\(\), 1i32\)", r"get_shape_dim(\1.shape(), 0i32)",
                        "extent read from axis 0 instead of 1")),
    ("reduction_identity", _sub(r"(let mut \w+: Tile<f32, [^=]*= constant\()f32::NEG_INFINITY", r"\g<1>0.0f32",
                                "identity of a running max: -inf became 0")),
    ("reduction_identity", _sub(r"(let mut \w+: Tile<f32, [^=]*= constant\()0\.0f32", r"\1f32::NEG_INFINITY",
                                "identity of a running sum: 0 became -inf")),
    # casts: a dropped tf32 cast, a round trip through a narrower type
    ("cast_drop", _sub(r"(let \w+: Tile<)tf32(, .*= convert_tile\(\w+\);)", r"\1f32\2",
                       "tf32 cast before the mma dropped (f32 kept)")),
    ("cast_width", _sub(r"let (\w+): Tile<f32, (\{[^}]*\})> = convert_tile\((\w+)\);",
                        r"let __mw_\1: Tile<bf16, \2> = convert_tile(\3); "
                        r"let \1: Tile<f32, \2> = convert_tile(__mw_\1);",
                        "cast to f32 goes through bf16 (wrong width)")),
    # fma split
    ("fma_split", _sub(r"fma\((\w+), (\w+), (\w+), rounding::\w+, ftz::\w+\)", r"(\1 * \2) + \3",
                       "fma split into a multiply and an add")),
    # speed hints: load latency, TMA
    ("latency_hint", _sub(r"(load_view_tko\(.*scope::\w+, )None(, tma::)", r"\1Some(3)\2",
                          "load latency hint 3 added")),
    ("latency_hint", _sub(r"Latency::<(\d+)>", lambda m: f"Latency::<{int(m[1]) + 3}>",
                          "gather/scatter latency hint changed")),
    ("tma_hint", _sub(r"tma::Enabled\b", "tma::Disabled", "TMA disabled on a tile load or store")),
    # loops: bounds and the persistent stride
    ("loop_bound", _sub(_FOR, _loop_end, "loop ends one iteration early")),
    ("loop_bound", _sub(_FOR, _loop_start, "loop skips its first iteration")),
    ("persistent_stride", _sub(r"\.step_by\(\((\w+)\) as usize\)", r".step_by(((\1 + 1i32)) as usize)",
                               "persistent-loop stride off by one")),
    ("persistent_stride", _sub(r"for (\w+) in \((\w+)\.\.", r"for \1 in ((\2 + 1i32)..",
                               "persistent loop starts one tile late")),
    # constants: the last digit of a literal
    ("constant_digit", _sub(r"(?<![\w.])(?P<num>-?\d+\.\d+)(?P<suf>f32|f64)\b", _last_digit,
                            "float constant {old} became {new}")),
    ("constant_digit", _sub(r"(?<![\w.,(])(?P<num>-?\d+)(?P<suf>i32|i16|i64)\b(?!\))", _last_digit,
                            "integer constant {old} became {new}")),
]

_PRODUCT = re.compile(r"^\s*let (?:mut )?(?P<p>\w+): Tile<(?P<t>f32|f16|bf16), (?P<s>\{[^}]*\})> = "
                      r"(?P<a>\w+) \* (?P<b>\w+);")
_SUM = re.compile(r"= (?P<x>\w+) \+ (?P<y>\w+);")
_BINDS = re.compile(r"^\s*(?:let (?:mut )?)?(?P<n>\w+)(?::[^=]*)? = ")


def _fma_fuse(lines: list[str], first: int, last: int):
    """``fma_fuse``: the reverse of ``fma_split``. A float product ``let p: Tile<T, S> = a * b;``
    whose value a later line of the same entry adds (``= p + c;`` or ``= c + p;``, same tile
    type) becomes ``fma(a, b, c, ...)`` on that line: one rounding where the reference has two.
    Yields (line number, new line, description); the product's own line stays."""
    products: dict[str, tuple[str, str, str]] = {}
    for n in range(first + 1, last):
        line = lines[n - 1]
        s = _SUM.search(line)
        for p, c in ((s["x"], s["y"]), (s["y"], s["x"])) if s else ():
            if p in products and f": {products[p][0]} =" in line:
                _, a, b = products[p]
                new = line[:s.start()] + f"= fma({a}, {b}, {c}, rounding::NearestEven, ftz::Disabled);" + line[s.end():]
                yield n, new, f"{a} * {b} + {c} fused into one fma"
                break
        bound = _BINDS.match(line)
        if bound:      # a name bound again: products of it or named by it no longer read as written
            name = bound["n"]
            products = {p: v for p, v in products.items() if p != name and name not in v[1:]}
        m = _PRODUCT.match(line)
        if m and m["p"] not in (m["a"], m["b"]):
            products[m["p"]] = (f"Tile<{m['t']}, {m['s']}>", m["a"], m["b"])


#: kinds whose edit reads other lines of the entry: (kind, fn(lines, first, last) -> (line, new, description))
CONTEXT_OPERATORS = [("fma_fuse", _fma_fuse)]

KINDS = sorted({k for k, _ in OPERATORS} | {k for k, _ in CONTEXT_OPERATORS})

_ENTRY = re.compile(r"^\s*pub unsafe fn (\w+)\s*<")


def entries(text: str) -> dict[str, tuple[int, int]]:
    """Each ``#[cutile::entry]`` function of a port: name -> (first body line, last line), 1-based.
    Helper stubs (``load_ptr_tko_padded``: no ``#[cutile::entry``) are left out."""
    lines = text.splitlines()
    out, cur, depth, start, opened = {}, None, 0, 0, False
    for i, line in enumerate(lines, 1):
        m = _ENTRY.match(line)
        if cur is None and m and i > 1 and "cutile::entry" in lines[i - 2]:
            cur, depth, start, opened = m[1], 0, i, False
        if cur is not None:
            depth += line.count("{") - line.count("}")
            opened = opened or depth > 0
            if opened and depth == 0:
                out[cur] = (start, i)
                cur = None
    return out


def candidates(text: str, only_entries=None) -> list[Mutant]:
    """Every edit an operator makes on a body line of an entry (comments skipped), in file order;
    ids are assigned by :func:`sample`."""
    lines = text.splitlines()
    out = []
    for entry, (a, b) in entries(text).items():
        if only_entries is not None and entry not in only_entries:
            continue
        for n in range(a + 1, b):
            line = lines[n - 1]
            if line.lstrip().startswith("//"):
                continue
            for kind, op in OPERATORS:
                for new, desc in op(line):
                    out.append(Mutant("", kind, n, entry, line, new, desc))
        for kind, op in CONTEXT_OPERATORS:
            for n, new, desc in op(lines, a, b):
                if not lines[n - 1].lstrip().startswith("//"):
                    out.append(Mutant("", kind, n, entry, lines[n - 1], new, desc))
    order = {e: i for i, e in enumerate(entries(text))}
    out.sort(key=lambda c: (order[c.entry], c.line))        # file order, as the line operators give it
    return out


def sample(cands: list[Mutant], kernel: str, seed: int = 0, per_kind: int = 3, max_mutants: int = 40) -> list[Mutant]:
    """A deterministic draw (see the module doc), ids ``m001``... in (kind, line) order."""
    rng = random.Random(f"{seed}:{kernel}")
    groups: dict[tuple, list[Mutant]] = {}
    for c in cands:                          # the same edit in several entries: one of them
        groups.setdefault((c.kind, c.before.strip(), c.after.strip()), []).append(c)
    uniq = [rng.choice(g) for _, g in sorted(groups.items(), key=lambda kv: kv[0])]
    by_kind: dict[str, list[Mutant]] = {}
    for c in uniq:
        by_kind.setdefault(c.kind, []).append(c)
    picked = []
    for kind in sorted(by_kind):
        pool = by_kind[kind]
        picked += rng.sample(pool, min(per_kind, len(pool)))
    if len(picked) > max_mutants:
        picked = rng.sample(picked, max_mutants)
    picked.sort(key=lambda c: (c.kind, c.line, c.after))
    return [Mutant(f"m{i:03d}", c.kind, c.line, c.entry, c.before, c.after, c.description)
            for i, c in enumerate(picked, 1)]


def apply(text: str, m: Mutant) -> str:
    """The port's text with mutant ``m`` applied (its one line replaced).

    Raises:
        ValueError: the line no longer reads ``m.before``."""
    lines = text.split("\n")
    if lines[m.line - 1] != m.before:
        raise ValueError(f"line {m.line} is not the mutant's: {lines[m.line - 1]!r}")
    lines[m.line - 1] = m.after
    return "\n".join(lines)
