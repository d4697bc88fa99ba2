"""Step 2: the normalised graph of one side and the rewrites that cannot change a result
(asserts, assumes, fma, splats, tokens, index space, strides, dead code; the package
docstring lists each rule with the reason it is sound)."""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Iterator

from tileport.core import floats

from .ops import TERMINATORS, _is_effectful_name
from .parse import Entry, Op, _split_top, _ws


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


_SCALAR_CONST = re.compile(r"<\s*(\w+)\s*:\s*([^\[\],<>]+?)\s*>")
_TOKEN_OPERAND = re.compile(r"\s*\btoken\s*=\s*%")
_INT_WIDTH = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64}


def _width(t: str) -> int:
    e_m = floats.FORMATS.get(t)
    return 1 + e_m[0] + e_m[1] if e_m else _INT_WIDTH.get(t, 0)


def _int_text(t: str, bits: int) -> str:
    """An int constant attribute as tileirdisasm prints it (signed decimal; i1 true/false)."""
    w = _INT_WIDTH[t]
    if w == 1:
        return f"<{t}: {'true' if bits & 1 else 'false'}>"
    v = bits - (1 << w) if bits >> (w - 1) & 1 else bits
    return f"<{t}: {v}>"


# integer ops folded when every operand is a constant (cuTile Python folds constexpr
# arithmetic, cutile emits the ops on constants): exact two's complement arithmetic
_INT_FOLD = {"addi", "subi", "muli", "divi", "remi", "mini", "maxi", "andi", "ori", "xori",
             "shli", "shri", "cmpi", "negi", "exti", "trunci", "select"}
# folded ops whose folding on one side only the diff reports (graph_diff._unfolded_ints): a
# division of constants left in the IR is not folded by tileiras 13.4 either, and a loop bounded
# by one is not unrolled (tg_mamba2 compute_dd_dcb_dx_kernel: another pipeline, 11 % slower);
# cutile folds its own scalar + - * before they reach the IR
_REPORT_FOLD = {"divi", "remi"}
_CMP = {"equal": lambda a, b: a == b, "not_equal": lambda a, b: a != b,
        "less_than": lambda a, b: a < b, "less_than_or_equal": lambda a, b: a <= b,
        "greater_than": lambda a, b: a > b, "greater_than_or_equal": lambda a, b: a >= b}


def _fold_int(n: "_Node"):
    """(type, bits) of an integer op on constants, the chosen operand of a ``select`` on a
    constant condition, or None (not all constant, division by zero, a flagged overflow)."""
    if n.opname == "select":
        c = _const_bits(_producer(n.operands[0])) if len(n.operands) == 3 else None
        return None if c is None or c[0] != "i1" else n.args()[1 if c[1] & 1 else 2]
    cs = [_const_bits(_producer(v)) for v in n.operands]
    if not cs or any(c is None or c[0] not in _INT_WIDTH for c in cs):
        return None
    rt = re.search(r"[<x](i\d+)>\s*$", n.result_types[0])
    if rt is None or rt.group(1) not in _INT_WIDTH:
        return None
    out_t, w = rt.group(1), _INT_WIDTH[cs[0][0]]
    mask = (1 << w) - 1
    signed = "unsigned" not in n.pre

    def val(c):                       # the operand as the op reads it
        b = c[1] & ((1 << _INT_WIDTH[c[0]]) - 1)
        cw = _INT_WIDTH[c[0]]
        return b - (1 << cw) if signed and cw > 1 and b >> (cw - 1) & 1 else b
    v = [val(c) for c in cs]
    op = n.opname
    if op == "exti":
        return out_t, v[0] & ((1 << _INT_WIDTH[out_t]) - 1)
    if op == "trunci":
        return out_t, cs[0][1] & ((1 << _INT_WIDTH[out_t]) - 1)
    if op == "negi":
        r = -v[0]
    elif len(v) != 2:
        return None
    elif op == "cmpi":
        pred = n.pre.strip().split()[0]
        return (out_t, int(_CMP[pred](*v))) if pred in _CMP else None
    elif op in ("addi", "subi", "muli"):
        r = v[0] + v[1] if op == "addi" else v[0] - v[1] if op == "subi" else v[0] * v[1]
    elif op in ("divi", "remi"):
        if v[1] == 0:
            return None
        q = abs(v[0]) // abs(v[1]) * (1 if (v[0] >= 0) == (v[1] >= 0) else -1)     # toward zero
        if op == "remi":
            r = v[0] - v[1] * q
        else:
            exact = q * v[1] == v[0]
            if "negative_inf" in n.pre and not exact and (v[0] < 0) != (v[1] < 0):
                q -= 1
            elif "positive_inf" in n.pre and not exact and (v[0] < 0) == (v[1] < 0):
                q += 1
            elif re.search(r"rounding<(?!zero|negative_inf|positive_inf)", n.pre):
                return None
            r = q
    elif op in ("mini", "maxi"):
        r = min(v) if op == "mini" else max(v)
    elif op in ("andi", "ori", "xori"):
        a, b = cs[0][1] & mask, cs[1][1] & mask
        r = a & b if op == "andi" else a | b if op == "ori" else a ^ b
    elif op == "shli":
        r = v[0] << v[1] if 0 <= v[1] < w else None
    elif op == "shri":
        r = (v[0] >> v[1]) if 0 <= v[1] < w else None
    else:
        return None
    if r is None:
        return None
    if "overflow<" in n.pre and not -(1 << (w - 1)) <= r < (1 << w):
        return None                  # a flagged overflow is poison: not a value to fold
    return out_t, r & ((1 << _INT_WIDTH[out_t]) - 1)


def _const_bits(n: "_Node | None") -> tuple[str, int] | None:
    """(element type, bits) of a scalar ``constant`` (as printed, or already canonical); None
    for anything else."""
    m = _SCALAR_CONST.fullmatch(n.pre.strip()) if n is not None and n.opname == "constant" else None
    if m is None:
        return None
    t, text = m.group(1), m.group(2)
    if t in _INT_WIDTH:
        if t == "i1" and text in ("true", "false"):
            return t, int(text == "true")
        try:
            return t, int(text, 0) & ((1 << _INT_WIDTH[t]) - 1)
        except ValueError:
            return None
    if t not in floats.FORMATS:
        return None
    canon = re.fullmatch(r"\S+ 0x([0-9A-F]+)", text)
    bits = int(canon.group(1), 16) if canon else floats.parse(text, t)
    return None if bits is None else (t, bits)


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
        self.n_zero_trip = 0            # ``for`` loops removed by zero_trip_loops
        self.n_fma = 0
        self.fma_adds: list = []        # the addf/subf and mulf nodes that stand for an fma
        self.assumes: list[tuple[str, _Val]] = []
        # the selects masked_loads folded into their load's padding, with the load's rank
        self.select_paddings: list[tuple[_Node, int]] = []
        # the ops of :data:`_REPORT_FOLD` that constants() folded, with their opname before
        self.folded_ints: list[tuple[str, _Node]] = []

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


def _loop_bounds(n: _Node) -> tuple[int | None, int | None, int | None]:
    """(start, stop, step) of a ``for`` op, each its value when a scalar integer
    ``constant`` gives it (signed unless the loop is ``unsigned``), else None."""
    unsigned = re.search(r"\bunsigned\b", n.pre) is not None
    vals = []
    for op in n.operands[:3]:
        c = _const_bits(_producer(op))
        if c is None or c[0] not in _INT_WIDTH or c[0] == "i1":
            vals.append(None)
            continue
        w = _INT_WIDTH[c[0]]
        b = c[1] & ((1 << w) - 1)
        vals.append(b - (1 << w) if not unsigned and b >> (w - 1) & 1 else b)
    return tuple(vals + [None] * (3 - len(vals)))


def _loop_range_fact(pre: str, v: _Val) -> bool:
    """Does ``assume <pre>`` on ``v`` restate what a ``for`` loop's own range says of its
    induction variable (``bounded<lo, hi>`` with lo <= start and hi >= the last index, ``?``
    for either; constant start / stop / step, step > 0)? cutile writes such an assume on the
    index of a loop with constant bounds; cuTile Python does not: the fact holds in every
    iteration, so it is no promise either side could break."""
    m = re.match(r"^\s*bounded<\s*(-?\d+|\?)\s*,\s*(-?\d+|\?)\s*>\s*,?\s*%?\s*$", pre)
    v = v.resolve()
    if m is None or v.kind != "barg" or v.index != 0 or v.region_index != 0 or v.node is None \
            or v.node.opname != "for":
        return False
    start, stop, step = _loop_bounds(v.node)
    if start is None or step is None or step <= 0:
        return False
    lo, hi = m.group(1), m.group(2)
    if lo != "?" and int(lo) > start:
        return False
    if hi == "?":
        return True
    if stop is None:
        return False
    last = start + max(0, (stop - start - 1) // step) * step
    return stop <= start or int(hi) >= last


def _iter_ops(ops: list[Op]) -> Iterator[Op]:
    for op in ops:
        yield op
        for r in op.regions:
            yield from _iter_ops(r.ops)


def _producer(v: _Val) -> _Node | None:
    v = v.resolve()
    return v.node if v.kind == "op" else None


def _adopt(nodes: list[_Node], parent: "_Region | None") -> list[_Node]:
    """``nodes``, moved under ``parent`` (their new region, None at the top level)."""
    for c in nodes:
        c.parent = parent
    return nodes


def _walk_nodes(nodes: list[_Node]) -> Iterator[_Node]:
    """``nodes`` and every node in their regions, pre-order."""
    for n in nodes:
        yield n
        for r in n.regions:
            yield from _walk_nodes(r.nodes)


def _ancestors(n: _Node) -> Iterator[_Node]:
    """The ops whose regions hold ``n``, innermost first."""
    r = n.parent
    while r is not None:
        yield r.owner
        r = r.owner.parent


def _remove(lists: Iterable[list[_Node]], doomed: set) -> None:
    for nodes in lists:
        nodes[:] = [n for n in nodes if n not in doomed]


def _permutation(n: _Node) -> list[int] | None:
    """The permutation of a ``permute`` op (``permute %x [0, 2, 1]``); None if unreadable."""
    m = re.match(r"^\s*%\s*\[([\d,\s]*)\]\s*$", n.pre) if n.opname == "permute" else None
    return [int(x) for x in m.group(1).split(",") if x.strip()] if m else None


class _Normaliser:
    """Per-side rewrites (module docstring lists each rule and why it is sound)."""

    def __init__(self, side: _Side):
        self.s = side

    def run(self) -> None:
        self.asserts()
        self.identity_bitcasts()
        self.single_pass_loops()
        self.if_forwarding()
        self.guard_returns()      # after if_forwarding: a guard's token result is gone by then
        self.assumes()
        self.fma()
        self.negated_addends()
        self.constants()
        self.comparisons()
        self.shapes()
        self.permuted_scans()
        self.constants()          # again: ops on the splatted constants shapes() made
        self.zero_trip_loops()    # after constants(): bounds computed from constants are folded
        self.constant_ifs()       # after constants(): a one-trip loop's index is its start by then
        self.tokens()
        self.masked_loads()
        self.index_space()
        self.tensor_views()

    def asserts(self) -> None:
        doomed = {n for n in self.s.walk() if n.opname == "assert"}
        self.s.n_asserts = len(doomed)
        _remove(self.s.all_lists(), doomed)

    def identity_bitcasts(self) -> None:
        """A ``bitcast`` to its operand's own type is its operand: it reads the same bits as the
        same type. cutile writes one to use an int64 tile as its u64 (the same Tile IR ``i64``:
        Unsloth's int64 label as a gather index), cuTile Python uses the value itself."""
        doomed = set()
        for n in self.s.walk():
            if (n.opname == "bitcast" and len(n.operands) == 1 and len(n.results) == 1
                    and _ws(n.operands[0].resolve().type) == _ws(n.result_types[0])):
                n.results[0].alias = n.operands[0].resolve()
                doomed.add(n)
        _remove(self.s.all_lists(), doomed)

    def single_pass_loops(self) -> None:
        """A ``loop`` without carried values or results whose body ends in ``return`` and has
        no ``continue`` / ``break`` of its own runs its body once and ends the kernel: it is
        its body, and what follows it is unreachable. (A port wraps a kernel that returns early
        in one: cutile lowers ``return`` inside a ``loop`` only; cuTile Python writes the
        ``return`` straight in the ``if``.)"""
        def own_exits(nodes) -> bool:
            for c in nodes:
                if c.opname in ("continue", "break"):
                    return True
                if c.opname == "if" and any(own_exits(r.nodes) for r in c.regions):
                    return True
            return False

        changed = True
        while changed:
            changed = False
            for nodes in self.s.all_lists():
                for i, n in enumerate(nodes):
                    if (n.opname == "loop" and not n.operands and not n.results and not n.pre.strip()
                            and len(n.regions) == 1 and n.regions[0].nodes
                            and n.regions[0].nodes[-1].opname == "return"
                            and not own_exits(n.regions[0].nodes)):
                        # the rest of this block is unreachable
                        nodes[i:] = _adopt(n.regions[0].nodes, n.parent)
                        changed = True
                        break
                if changed:
                    break

    def guard_returns(self) -> None:
        """In the kernel's tail (its top-level body, where only the final ``return`` follows, and
        the branches of an ``if`` rewritten here), an ``if`` without results whose first branch
        ends in ``return`` and whose other does not: ``if c { A; return } else { B }; rest`` is
        ``if c { A } else { B; rest }`` (``rest`` runs only where ``c`` is false, and after
        ``A`` nothing but the kernel's end ran). cuTile Python writes a guard clause (``if
        bid >= n: return``) the first way, the port the second (tileiras 13.4 kept less of
        what the guard says inside cutile's once-run ``loop``); a port still in that loop
        reaches the first form by :meth:`single_pass_loops`."""
        def ends_in_return(nodes) -> bool:
            return bool(nodes) and nodes[-1].opname == "return"

        def tail(nodes, top: bool) -> None:
            end = len(nodes) - (1 if top and ends_in_return(nodes) else 0)
            for i, n in enumerate(nodes[:end]):
                if (n.opname == "if" and not n.results and len(n.regions) == 2
                        and ends_in_return(n.regions[0].nodes)
                        and not ends_in_return(n.regions[1].nodes)):
                    then, other = n.regions[0], n.regions[1]
                    moved = nodes[i + 1:end]
                    del then.nodes[-1]
                    k = len(other.nodes) - (1 if other.nodes and other.nodes[-1].opname == "yield"
                                            and not other.nodes[-1].operands else 0)
                    other.nodes[k:k] = _adopt(moved, other)
                    del nodes[i + 1:end]
                    tail(then.nodes, False)
                    tail(other.nodes, False)
                    return

        tail(self.s.body, True)

    def if_forwarding(self) -> None:
        """An ``if`` result that every branch going on past the ``if`` yields as the same value
        is that value (a branch that ends in ``return`` yields nothing); a ``yield`` of nothing
        is the implicit end of a branch. (cuTile Python's ``if`` with an early ``return`` yields
        the untouched memory token from its other branch; the port does not carry it.)
        Innermost ``if`` first: an outer branch that yields a nested ``if``'s forwarded result
        yields that value too (cutile 0.5.0 carries every loop-carried variable through an ``if``
        in a loop, cutile-compiler compile_expression.rs:2985-2994, where cuTile Python yields
        only what the branches assign: Unsloth's grouped GEMM, nested ifs in an expert walk)."""
        for n in reversed(list(self.s.walk())):
            if n.opname != "if" or not n.results:
                continue
            yields = [r.nodes[-1] if r.nodes and r.nodes[-1].opname == "yield" else None
                      for r in n.regions]
            going = [y for y in yields if y is not None]
            if not going or any(len(y.operands) != len(n.results) for y in going):
                continue
            types = {id(y): _split_top(y.types) for y in going}
            for k in reversed(range(len(n.results))):
                if len({id(y.args()[k]) for y in going}) != 1:
                    continue
                n.results[k].alias = going[0].args()[k]
                del n.results[k], n.result_types[k]
                for y in going:
                    del y.operands[k]
                    if k < len(types[id(y)]):
                        del types[id(y)][k]
            for k, res in enumerate(n.results):
                res.index = k
            m = re.search(r"->\s*\((.*)\)\s*$", n.pre)
            if m is not None:
                n.pre = n.pre[:m.start()].rstrip() + (f" -> ({', '.join(n.result_types)})"
                                                      if n.result_types else "")
            for y in going:
                y.pre = ", ".join(["%"] * len(y.operands))
                y.types = ", ".join(t.strip() for t in types[id(y)])
        for nodes in self.s.all_lists():
            nodes[:] = [c for c in nodes if not (c.opname == "yield" and not c.operands
                                                 and c.parent is not None and c.parent.owner.opname == "if")]

    def assumes(self) -> None:
        doomed = set()
        for n in self.s.walk():
            if n.opname == "assume" and n.operands and n.results:
                n.results[0].alias = n.operands[-1]
                if not _loop_range_fact(n.pre, n.operands[-1]):
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

    def constants(self) -> None:
        """Float constants compare by their bits (:func:`floats.canonical`), and a conversion of
        a constant is the constant it computes (program order, so a folded constant can be
        folded again): ``ftof`` with the default rounding (nearest even; tileiras folds it the
        same way, and at run time the conversion would give these bits), ``bitcast`` (the same
        bits read as another type). cutile writes a constant of the generic element type as an
        f32 constant converted to it (it has no literal of f16/bf16), cuTile Python writes the
        constant itself."""
        for n in self.s.walk():
            if n.opname == "for":
                self._single_trip(n)
                continue
            if n.opname == "constant":
                c = _const_bits(n)
                if c is not None:
                    n.pre = floats.canonical(*c) if c[0] in floats.FORMATS else _int_text(*c)
                continue
            if n.opname in _INT_FOLD and n.results and len(n.results) == 1:
                folded = _fold_int(n)
                if folded is not None:
                    if isinstance(folded, _Val):          # select of a constant condition
                        n.results[0].alias = folded
                        n.opname, n.operands, n.pre = "constant", [], "<folded select>"
                    else:
                        if n.opname in _REPORT_FOLD:
                            self.s.folded_ints.append((n.opname, n))
                        n.opname, n.pre, n.operands = "constant", _int_text(*folded), []
                        n.types = n.result_types[0]
                continue
            if n.opname not in ("ftof", "bitcast") or len(n.operands) != 1 or not n.results:
                continue
            if n.opname == "ftof" and n.pre.strip() not in ("%", "% rounding<nearest_even>"):
                continue
            c = _const_bits(_producer(n.operands[0]))
            dst = re.search(r"[<x]([a-z][a-z0-9]*)>\s*$", n.result_types[0])
            if c is None or dst is None:
                continue
            (src, bits), dst = c, dst.group(1)
            if dst not in floats.FORMATS:
                continue
            if n.opname == "ftof" and src in floats.FORMATS:
                bits = floats.convert(bits, src, dst)
            elif n.opname != "bitcast" or _width(src) != _width(dst):
                continue
            n.opname, n.pre, n.operands = "constant", floats.canonical(dst, bits), []
            n.types = n.result_types[0]

    @staticmethod
    def _single_trip(n: _Node) -> None:
        """A ``for`` whose start, stop and step are constants (already folded: program order)
        and that runs exactly once (start < stop <= start + step) has the induction variable
        ``start`` in its only iteration: the variable is that constant. (cutile knows the
        range and folds ``j * TILE`` in such a loop to 0, cuTile Python keeps ``muli``.)"""
        if not n.regions or not n.regions[0].args:
            return
        start, stop, step = _loop_bounds(n)
        if None not in (start, stop, step) and step > 0 and start < stop <= start + step:
            n.regions[0].args[0].alias = n.operands[0].resolve()

    def zero_trip_loops(self) -> None:
        """A ``for`` whose start and stop are constants (folded: program order) with stop <= start
        (signed, or unsigned where the loop says ``unsigned``) and a positive constant step never
        runs its body: its results are its init values and it has no effect. Tile IR's ``for``
        (spec 8.5.4, cuda_tile.for) iterates over ``[lowerBound, upperBound)``, the first
        iteration receives ``initValues``, each result is the last value of its carried variable,
        and the op has an effect only if its region's ops do. cuTile Python 1.7.0 keeps such a loop
        (``range(0)`` of a constexpr: Liger's KL-div with N_FULL_CHUNKS 0); cutile 0.5.0 cannot
        write it (it assumes the index in ``[start, stop - 1]``), so the port leaves it out."""
        doomed = set()
        for n in self.s.walk():
            if n.opname != "for" or any(p in doomed for p in _ancestors(n)):
                continue
            start, stop, step = _loop_bounds(n)
            if None in (start, stop, step) or step <= 0 or stop > start:
                continue
            inits = n.operands[3:]
            if len(inits) != len(n.results):
                continue
            for r, v in zip(n.results, inits):
                r.alias = v.resolve()
            doomed.add(n)
        self.s.n_zero_trip += len(doomed)
        # an fma of a body that never runs is no contraction of the kernel's
        gone = {id(c) for n in doomed for r in n.regions for c in _walk_nodes(r.nodes)}
        adds = self.s.fma_adds[0::2]
        self.s.n_fma -= sum(1 for a in adds if id(a) in gone)
        self.s.fma_adds = [n for n in self.s.fma_adds if id(n) not in gone]
        _remove(self.s.all_lists(), doomed)

    def constant_ifs(self) -> None:
        """An ``if`` whose condition is a constant (folded: a one-trip loop's index compared with
        its start, :meth:`_single_trip`) is the branch it takes: that branch's ops in its place,
        its results the values the branch yields. cutile knows a constant loop's range and drops
        such an ``if``; cuTile Python keeps it (tg_mamba2 ``compute_dd_dcb_dx_kernel``:
        ``if head_tile_idx == 0`` in ``for head_tile_idx in range(head_size // BLOCK_HEAD)``,
        one trip, 2026-12-02). A branch that leaves otherwise than by ``yield`` is kept as it is."""
        for nodes in list(self.s.all_lists()):
            k = 0
            while k < len(nodes):
                n = nodes[k]
                c = _const_bits(_producer(n.operands[0])) if n.opname == "if" and n.operands else None
                if c is None or c[0] != "i1":
                    k += 1
                    continue
                taken = 0 if c[1] & 1 else 1
                body = n.regions[taken].nodes if taken < len(n.regions) else []
                last = body[-1] if body else None
                if last is not None and last.opname != "yield" or \
                        len(last.operands if last is not None else []) != len(n.results):
                    k += 1
                    continue
                for res, v in zip(n.results, last.operands if last is not None else []):
                    res.alias = v
                inner = _adopt(body[:-1] if last is not None else [], n.parent)
                nodes[k:k + 1] = inner
                k += len(inner)

    def negated_addends(self) -> None:
        """``addf(x, negf(y))`` and ``addf(negf(y), x)`` are ``subf(x, y)`` with the addf's flags:
        IEEE 754-2008 5.4.1 defines x - y as x + (-y) and addition commutes, so the three are
        one value bit for bit. An fma split by hand into ``mulf`` + ``addf(.., negf(c))`` then
        meets the ``subf`` the fma rule makes of ``fma(a, b, negf(c))`` (issue 36's mutants)."""
        for n in self.s.walk():
            if n.opname != "addf" or len(n.operands) != 2:
                continue
            for i in (1, 0):
                neg = _producer(n.operands[i])
                if neg is not None and neg.opname == "negf" and len(neg.operands) == 1:
                    n.opname, n.operands = "subf", [n.operands[1 - i], neg.operands[0]]
                    break

    def comparisons(self) -> None:
        """``a > b`` is ``b < a`` and ``a >= b`` is ``b <= a`` (``cmpi``/``cmpf``, same
        signedness or ordering): comparisons are written with ``less_than[_or_equal]``, operands
        swapped, so the two spellings of one comparison have one signature."""
        for n in self.s.walk():
            if n.opname in ("cmpi", "cmpf") and len(n.operands) == 2:
                m = re.match(r"^greater_than(_or_equal)?\b", n.pre.strip())
                if m:
                    n.pre = "less_than" + (m.group(1) or "") + n.pre.strip()[m.end():]
                    n.operands = [n.operands[1], n.operands[0]]

    def shapes(self) -> None:
        """Identity broadcast/reshape, a reshape of a reshape as one reshape (a reshape keeps
        the elements' row-major order), and splat canonicalisation (program order, so an
        operand is canonical before its users)."""
        doomed = set()
        for n in self.s.walk():
            if n.opname not in ("broadcast", "reshape") or len(n.operands) != 1 or not n.results:
                continue
            inner = _producer(n.operands[0])
            if n.opname == "reshape" and inner is not None and inner.opname == "reshape" and inner.operands:
                n.operands = [inner.operands[0]]
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

    def users(self) -> dict:
        """id of each (resolved) value -> the ops that read it, in program order."""
        users: dict = {}
        for n in self.s.walk():
            for v in n.args():
                users.setdefault(id(v), []).append(n)
        return users

    def permuted_scans(self) -> None:
        """``permute(scan(permute(x, p), dim=0), p^-1)``, the scan's only user the second
        permute, is ``scan(x, dim=p[0])``: a scan treats every line along its axis on its own,
        so scanning axis ``p[0]`` of ``x`` in the permuted layout and permuting back gives the
        scan of ``x`` along that axis, lane for lane. cutile 0.5.0 writes every scan with
        ``dim = 0`` (cutile-compiler compile_cuda_tile_op.rs, compile_scan_op), so its port of
        a scan along another axis is written this way."""
        users = self.users()
        doomed = set()
        for n in self.s.walk():
            if n.opname != "scan" or len(n.operands) != 1 or len(n.results) != 1:
                continue
            m = re.match(r"^(\s*%\s*)dim\s*=\s*0\b(.*)$", n.pre, re.S)
            inner = _producer(n.operands[0].resolve())
            outs = users.get(id(n.results[0]), [])
            if m is None or inner is None or inner.opname != "permute" or len(outs) != 1:
                continue
            outer = outs[0]
            p, q = _permutation(inner), _permutation(outer)
            if (outer.opname != "permute" or p is None or q is None or len(p) != len(q)
                    or [p[i] for i in q] != list(range(len(p)))):
                continue
            src = inner.operands[0].resolve()
            n.operands = [src]
            n.pre = f"{m.group(1)}dim={p[0]}{m.group(2)}"
            n.types = n.types.replace(n.result_types[0], src.type)
            n.result_types = [src.type]
            n.results[0].type = src.type
            outer.results[0].alias = n.results[0]
            doomed.add(outer)
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
        # a memory op's `token=` from make_token orders it after nothing: as if it had none
        for n in self.s.walk():
            m = _TOKEN_OPERAND.search(n.pre)
            if m is None:
                continue
            k = n.pre[:m.start()].count("%")
            p = _producer(n.operands[k]) if k < len(n.operands) else None
            if p is not None and p.opname == "make_token":
                del n.operands[k]
                n.pre = _ws(n.pre[:m.start()] + n.pre[m.end():])

    def masked_loads(self) -> None:  # noqa: C901 (one rule, two forms)
        """``select(m, load_ptr_tko(p, m), pad)`` with the select as the load's only user is
        ``load_ptr_tko(p, m, pad)``: a masked gather's padding, as cuTile Python writes it,
        equals a masked load without padding whose masked-off lanes (undefined) the select with
        the same mask replaces by ``pad``; cutile has no scalar of a generic element type to
        pass as the padding of its ``load_ptr_tko``, so it writes the select. A padding without a
        mask is never read (every lane loads): it is dropped (cuTile Python writes one for
        ``check_bounds=False``)."""
        for n in self.s.walk():
            if n.opname == "load_ptr_tko" and _untokened(n) == 2 and " -> " in n.types:
                head, _, tail = n.types.partition(" -> ")
                types = _split_top(head)
                if len(types) == 2 and not re.search(r"[<x]i1>$", types[1]):
                    n.operands = n.operands[:1] + n.operands[2:]
                    n.pre = _ws(re.sub(r"^(\w+ %), %", r"\1", n.pre.strip()))
                    n.types = f"{types[0]} -> {tail}"
        users = self.users()
        doomed = set()
        for n in self.s.walk():
            if (n.opname != "select" or len(n.operands) != 3 or not n.results):
                continue
            cond, val, pad = n.args()
            load = val.node if val.kind == "op" and val.index == 0 else None
            if (load is None or load.opname != "load_ptr_tko" or _untokened(load) != 2
                    or load.args()[1] is not cond or users.get(id(val)) != [n]
                    or " -> " not in load.types or load.parent is not n.parent):
                continue
            # the padding must be defined before the load: a constant defined between them
            # moves up; else the load moves to the select's place when nothing between them
            # reads its result token
            nodes = load.parent.nodes if load.parent is not None else self.s.body
            at, sel = nodes.index(load), nodes.index(n)
            pp = _producer(pad)
            if pp is not None and pp in nodes[at:sel]:
                if not pp.operands:
                    nodes.remove(pp)
                    nodes.insert(at, pp)
                elif any(users.get(id(r)) and any(u in nodes[at:sel] for u in users[id(r)])
                         for r in load.results[1:]):
                    continue
                else:
                    nodes.remove(load)
                    nodes.insert(nodes.index(n), load)
            load.operands = load.operands[:2] + [pad] + load.operands[2:]
            load.pre = _ws(re.sub(r"^(\w+ %, %)", r"\1, %", load.pre.strip()))
            head, _, tail = load.types.partition(" -> ")
            load.types = f"{head}, {pad.type} -> {tail}"
            n.results[0].alias = val
            doomed.add(n)
            m = re.match(r"\s*tile<((?:[\d?]+x)*)", head)
            self.s.select_paddings.append((n, m.group(1).count("x") if m else 0))
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
    if len(n.operands) == 1 and " -> " in n.types:
        # the view's base alone is left: no run-time shape or stride, so no operand type either
        # (Tile IR prints `tile<i32> -> tensor_view<...>` only while one is there; a
        # one-element array's view, shape [1] on both sides: frontend.unit_array)
        n.types = n.types.split(" -> ", 1)[1]


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


def _enclosing_op(n: _Node) -> _Node | None:
    return n.parent.owner if n.parent is not None else None


def _untokened(n: _Node) -> int:
    """Operands of a memory op other than its ``token=`` (printed last)."""
    return len(n.operands) - (1 if _TOKEN_OPERAND.search(n.pre) else 0)


def _effectful(n: _Node, memo: dict) -> bool:
    """Side-effecting op (loads count), or a region op whose body has an effect (or, for
    ``if``, a break/continue that leaves an enclosing loop or a return that ends the kernel)."""
    if n in memo:
        return memo[n]
    eff = _is_effectful_name(n.opname)
    if not eff and n.regions:
        for r in n.regions:
            for c in r.nodes:
                if _effectful(c, memo) or (n.opname == "if" and c.opname in ("break", "continue", "return")):
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


def hints_for_target(canon: str, target: str | None) -> str:
    """The hints of a canonical hint text (:func:`parse._extract_hints`) that apply when the
    kernel is compiled for ``target``: the ``default`` group (and bare hints) overridden by the
    ``target`` group; groups of other architectures do not apply. cuTile Python writes
    ``<default = {...}, sm_80 = {...}>`` (a ``ct.ByTarget`` per architecture, cuda-tile 1.7.0
    ``CompilerOptions.hints_by_target``), cutile keys what it carries by the compile target
    (``<sm_90 = {...}>``, cutile-compiler 0.5.0 ``build_load_store_hints``); for the compiled
    target both mean the same. ``target`` None: the text unchanged."""
    if target is None or not canon:
        return canon
    default: dict[str, str] = {}
    mine: dict[str, str] = {}
    for group in canon.split("; "):
        m = re.fullmatch(r"([\w.\-]+)=\{(.*)\}", group)
        items = m.group(2).split(", ") if m else [group]
        into = default if m is None or m.group(1) == "default" else mine if m.group(1) == target else None
        if into is None:
            continue
        for item in items:
            k, _, v = item.partition("=")
            into[k] = v
    return ", ".join(f"{k}={v}" for k, v in sorted({**default, **mine}.items()))
