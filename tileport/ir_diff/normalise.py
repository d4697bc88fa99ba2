"""Step 2: the normalised graph of one side and the rewrites that cannot change a result
(asserts, assumes, fma, splats, tokens, index space, strides, dead code; the package
docstring lists each rule with the reason it is sound)."""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Iterator

from .ops import TERMINATORS, _is_effectful_name
from .parse import Entry, Op, _ws


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
