"""Step 3: structural signatures of the normalised graphs, their comparison and the frontier
of the difference (root-cause findings, hints, info notes): :func:`diff_ir`."""
from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterator

from tileport.core.verdict import Finding, loc

from .normalise import (
    _ancestors,
    _dce,
    _effectful,
    _enclosing_op,
    _Node,
    _Normaliser,
    _producer,
    _Side,
    _unify_strides,
    _Val,
    hints_for_target,
)
from .ops import COMMUTATIVE, TERMINATORS, category_of
from .parse import Entry, _ws, parse_tileir


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

    def __init__(self, ref: _Side, port: _Side, ref_path: str, port_path: str,
                 target: str | None = None):
        self.ref_path, self.port_path, self.target = ref_path, port_path, target
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
        t = self.target
        on = f" for {t}" if t else ""
        rh, ph = hints_for_target(re_.hints, t), hints_for_target(pe.hints, t)
        if rh != ph:
            self.findings.append(Finding(
                "hint", "warn", "kernel",
                f"entry optimization hints{on} differ: ref '{rh or 'none'}' vs port '{ph or 'none'}'",
                loc(self.ref_path, re_.line, re_.text.strip()),
                loc(self.port_path, pe.line, pe.text.strip())))
        for a, b in sorted(pairs, key=lambda ab: ab[0].line or 0):
            ah, bh = hints_for_target(a.hints, t), hints_for_target(b.hints, t)
            if ah != bh:
                self.findings.append(Finding(
                    "hint", "warn", "kernel",
                    f"'{a.opname}' hints{on} differ: ref '{ah or 'none'}' vs port '{bh or 'none'}'",
                    self.rloc(a), self.ploc(b)))

    # -- info notes -----------------------------------------------------------------
    def _notes(self, ref: _Side, port: _Side, stride_notes) -> None:
        self._select_paddings(ref, port)
        self._loop_placement()
        self._unfolded_ints(ref, port)
        if ref.n_asserts or port.n_asserts:
            self.findings.append(Finding(
                "control_flow", "info", "compiler",
                f"removed assert ops (bounds checks, no value computed): ref {ref.n_asserts}, "
                f"port {port.n_asserts}"))
        if ref.n_zero_trip != port.n_zero_trip:
            self.findings.append(Finding(
                "control_flow", "info", "compiler",
                f"removed zero-trip for loops (constant bounds, stop <= start: the results are "
                f"the inits): ref {ref.n_zero_trip}, port {port.n_zero_trip}"))
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


    def _select_paddings(self, ref: _Side, port: _Side) -> None:
        """A masked gather's padding written as a select after an unpadded load on one side
        and inside the load on the other: the same values (masked_loads folds them), but not
        the same code. At rank >= 2 tileiras 13.4 reads a gathered mma operand back from shared
        memory into registers after such a select (sm_90 SASS, tg_fp8_quantization_matmul
        gather_swap: 32/32 QGMMA with a register A operand against 0/32, stack 1480 against 768
        bytes, 0.57x device time on the H200; tg_moe the same with HGMMA): a warning; at
        rank <= 1 a note."""
        for side, mine, other, where in (("port", port, ref, self.ploc), ("ref", ref, port, self.rloc)):
            for ranked, sev in ((lambda k: k >= 2, "warn"), (lambda k: k <= 1, "info")):
                sel = [n for n, k in mine.select_paddings if ranked(k)]
                extra = len(sel) - sum(1 for _, k in other.select_paddings if ranked(k))
                if extra <= 0:
                    continue
                self.findings.append(Finding(
                    "memory", sev, "tool",
                    f"{extra} masked gather(s) of rank {'>= 2' if sev == 'warn' else '<= 1'} take "
                    f"their padding by a select after an unpadded load on the {side} side only, "
                    f"inside the load on the other (equal values; "
                    + ("tileiras 13.4 then feeds a gathered mma operand from registers, not shared "
                       "memory: slower)" if sev == "warn" else "compiled differently)"),
                    *((None, where(sel[0])) if side == "port" else (where(sel[0]), None))))


    def _loop_placement(self) -> None:
        """Ops of the same signature that one side runs inside more ``for`` / ``loop`` bodies
        than the other. A signature does not depend on the region its op sits in, so the graphs
        match; but cuTile Python hoists what does not change in a loop out of it, and cutile
        does not, and tileiras 13.4 does not make up for it (matched sm_90 SASS,
        lg_fused_neighborhood_attention ``_fna_bwd_dq_kernel`` bf16 BLOCK_M128: 6,328
        instructions against the reference's 3,296, and 3,296, IDENTICAL, once the port loads
        its four loop-invariant tiles before its loop; lg_multi_token_attention
        ``_fused_softmax_zeromask_bwd_kernel`` f32 L100: IDENTICAL once the port computes its
        loop-invariant index arithmetic before its loops).

        Loop depth counts ``for`` bodies and ``loop`` bodies that can run again (a ``continue``
        of their own). Loads pair up one to one (a load is an effect: how many run counts): a
        ``memory`` warning per side with how many and the first. Other ops (``constant`` left out, pure
        ops compare as a set) by the shallowest copy on each side: a ``control_flow`` note per
        side. Owner ``tool``: the translator can write them before the loop."""
        memo: dict = {}

        def repeats(o: _Node) -> bool:
            # a ``for``; a ``loop`` with a ``continue`` of its own (one that only breaks or
            # returns runs once: cutile's wrapper of a kernel that returns early)
            if o in memo:
                return memo[o]
            memo[o] = o.opname == "for"
            if o.opname != "loop":
                return memo[o]
            work = [c for r in o.regions for c in r.nodes]
            while work:
                c = work.pop()
                if c.opname == "continue":
                    memo[o] = True
                    break
                if c.opname == "if":
                    work += [x for r in c.regions for x in r.nodes]
            return memo[o]

        def depth(n: _Node) -> int:
            return sum(1 for a in _ancestors(n) if repeats(a))

        loads = {"ref": [], "port": []}
        pure = {"ref": [], "port": []}
        for s, rn in self.r.by_sig.items():
            pn = self.p.by_sig.get(s)
            if not pn:
                continue
            op = rn[0].opname
            if op.startswith("load"):
                for a, b in zip(sorted(rn, key=depth), sorted(pn, key=depth)):
                    if depth(a) != depth(b):
                        loads["port" if depth(b) > depth(a) else "ref"].append((a, b))
            elif op != "constant" and not rn[0].regions and op not in TERMINATORS \
                    and not self.r.sig.multiset(rn[0]):
                a, b = min(rn, key=depth), min(pn, key=depth)
                if depth(a) != depth(b):
                    pure["port" if depth(b) > depth(a) else "ref"].append((a, b))
        for (kind, sev, cat), found in ((("load", "warn", "memory"), loads), (("op", "info", "control_flow"), pure)):
            for side, pairs in found.items():
                if not pairs:
                    continue
                a, b = min(pairs, key=lambda ab: ab[0].line or 0)
                other = "ref" if side == "port" else "port"
                what = ("loads the same values again on every iteration" if kind == "load"
                        else "computes them again on every iteration")
                self.findings.append(Finding(
                    cat, sev, "tool",
                    f"{len(pairs)} {kind}(s) run inside more loops on the {side} side than on the "
                    f"{other} side (hoisted out of the loop on the {other} side only; first: "
                    f"'{a.opname}' at ref line {a.line}, port line {b.line}): the {side} {what}, "
                    f"and tileiras compiles other code",
                    self.rloc(a), self.ploc(b)))

    def _unfolded_ints(self, ref: _Side, port: _Side) -> None:
        """An integer division of constants (``divi`` / ``remi``, normalise._REPORT_FOLD) that
        one side leaves in its IR where the other has the constant: the normaliser folds it, so
        the graphs match, but neither cutile nor tileiras 13.4 folds it, and a loop it bounds
        is not unrolled (tg_mamba2 compute_dd_dcb_dx_kernel bf16-cs64_hpg8_N128: a loop to
        ``divi %c128, %c32`` got another pipeline, 11 % slower on the H200). A warning naming
        the op and its line, owner ``tool`` (the translator should write what folds)."""
        keys = {}
        for side, view in (("ref", self.r), ("port", self.p)):
            keys[side] = [((op, view.sig.node[n]), n) for op, n in view.side.folded_ints
                          if n in view.sig.node]
        for side, other, where in (("port", "ref", self.ploc), ("ref", "port", self.rloc)):
            extra = Counter(k for k, _ in keys[side]) - Counter(k for k, _ in keys[other])
            for key, n in keys[side]:
                if extra[key] <= 0:
                    continue
                extra[key] -= 1
                self.findings.append(Finding(
                    "math", "warn", "tool",
                    f"`{key[0]}` of constants at {side} IR line {n.line} is not folded on the "
                    f"{side} side, folded to a constant on the {other} side (the diff folds it "
                    f"to match; neither cutile nor tileiras 13.4 does, and a loop it bounds is not "
                    f"unrolled)",
                    *((None, where(n)) if side == "port" else (where(n), None))))


def _severity_rank(f: Finding) -> int:
    return {"critical": 0, "warn": 1, "info": 2}[f.severity]


def _line_key(f: Finding) -> tuple:
    if f.ref and f.ref.get("line") is not None:
        return (f.ref["line"], 0)
    if f.port and f.port.get("line") is not None:
        return (f.port["line"], 1)
    return (10 ** 9, 2)


def diff_ir(ref_text: str, port_text: str, ref_path: str = "ref.tileir",
            port_path: str = "port.tileir", target: str | None = None) -> DiffResult:
    """Compare a reference and a port Tile IR text (see the package docstring).

    Args:
        ref_text / port_text: tileirdisasm output of the cuTile Python reference and of
            the cuTile Rust port.
        ref_path / port_path: names used in finding locations.
        target: the GPU architecture both are compiled for (``sm_90``): hints compare as they
            apply to it (:func:`normalise.hints_for_target`); None compares them as written.
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
        d = _Differ(rs, ps, ref_path, port_path, target)
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
