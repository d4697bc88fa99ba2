"""The launch-time facts a Tile IR entry states about its parameters, read from the IR text.

A launcher's facts reach Tile IR as ``assume`` ops on the entry's arguments (``assume div_by<8>,
%arg3``, chains of assumes on one value) and as constants in a ``make_tensor_view``'s type
(``tensor_view<1x?xf16, strides=[?,1]>``). The structural diff treats ``assume`` as transparent
(it changes no value); this module makes the facts themselves comparable, so that a run-time pair
whose sides were compiled with different launch facts is a named difference, never a silent one.

Both frontends lay out an entry's arguments alike (cuda-tile 1.7.0 ``cutile_python_v1/v2`` and
cutile 0.5.0's entry generator): per array its base pointer, one extent per dimension, one stride
per dimension; per scalar one argument; constexprs none. :func:`entry_facts` labels each fact
with the parameter it belongs to from that layout (``input.shape[1]``, ``input.stride[0]``,
``input.base``, ``n_rows``), or ``arg#K`` where the IR does not follow it.

Only facts a live op reads count (:func:`live_uses`): cutile's entry states a fact on every
argument and builds a tensor view of every array, where cuda-tile states only those the kernel
reads; a fact on a value nothing live reads (an extent of an array the kernel slices with
computed extents, an array it never touches) cannot change the compiled code.
"""
from __future__ import annotations

import re

_ENTRY = re.compile(r"^\s*entry\s+@(\S+?)\((?P<args>.*?)\)\s*(optimization_hints|\{)", re.M)
_ARG = re.compile(r"%(arg\d+)\s*:\s*(tile<[^>]*>+)")
_ASSUME = re.compile(r"^\s*%(?P<res>[\w.$-]+)\s*=\s*assume\s+(?P<pred>[a-z_]+<[^>]*>)\s*,\s*%(?P<src>[\w.$-]+)", re.M)
_VIEW = re.compile(r"make_tensor_view\s+%(?P<ptr>[\w.$-]+)\s*,\s*shape\s*=\s*\[(?P<shape>[^\]]*)\]"
                   r"(?:\s*,\s*strides\s*=\s*\[(?P<strides>[^\]]*)\])?[^\n]*?"
                   r"tensor_view<(?P<ty>[^,>]*)(?:,\s*strides=\[(?P<tstrides>[^\]]*)\])?")


def entry_symbol(text: str) -> str | None:
    """The symbol of the first entry of the Tile IR ``text`` (``entry @<symbol>(...)``; cuda-tile
    mangles every launch fact a kernel was compiled with into it), or None without an entry."""
    m = _ENTRY.search(text)
    return m.group(1) if m else None


def _root(v: str, parent: dict) -> str:
    seen = set()
    while v in parent and v not in seen:
        seen.add(v)
        v = parent[v]
    return v


def arg_divisors(text: str) -> dict[str, int]:
    """``{argK: divisor}``: the largest ``div_by<N>`` any assume chain rooted at entry argument
    ``%argK`` states (1 where none)."""
    parent, div = {}, {}
    for m in _ASSUME.finditer(text):
        parent[m["res"]] = m["src"]
    for m in _ASSUME.finditer(text):
        d = re.fullmatch(r"div_by<\s*(\d+)\s*(?:,[^>]*)?>", m["pred"].strip())
        if d:
            r = _root(m["res"], parent)
            div[r] = max(div.get(r, 1), int(d.group(1)))
    return div


def _body_div_by(text: str) -> int:
    """How many ``div_by`` assumes of ``text`` are not rooted at an entry argument or a constant
    (a kernel's own ``ct.assume_divisible_by`` on a computed value; cuda-tile restates a unit
    stride's divisor on the constant it becomes)."""
    parent = {m["res"]: m["src"] for m in _ASSUME.finditer(text)}
    return sum(1 for m in _ASSUME.finditer(text)
               if m["pred"].startswith("div_by") and not re.fullmatch(r"arg\d+|cst\w*", _root(m["res"], parent)))


def live_uses(text: str) -> tuple[set[str], set[int]]:
    """What of the first entry of ``text`` a live op reads: the entry arguments (``argK``) and
    the lines (1-based) of the live ``make_tensor_view`` ops. Live as the structural diff's dead
    code elimination (:func:`normalise._dce`) has it: reachable backwards from a side effect
    (loads count) or the entry's ``return``; ``assume`` and ``make_tensor_view`` are pure, so
    an assume chain that only feeds an unused view is dead. Raises IRParseError / ValueError."""
    from .normalise import _dce, _Side
    from .parse import parse_tileir

    mod = parse_tileir(text)
    if not mod.entries:
        raise ValueError("no `entry @...(...)` in the Tile IR text")
    side = _Side(mod.entries[0], "<facts>")
    _dce(side, {})
    args, views = set(), set()
    for n in side.walk():
        if n.opname == "make_tensor_view":
            views.add(n.line)
        for v in n.args():
            if v.kind == "arg":
                args.add(v.name.lstrip("%"))
    return args, views


def entry_facts(text: str, params: list[dict]) -> dict[str, str]:
    """The facts of the first entry of ``text``, as ``{label: fact}`` with fact ``div_by<N>``
    (N > 1) or ``const <c>`` (a static extent or stride); an unhinted dynamic value has no entry.

    ``params``: ``analysis.json``'s parameter list of the kernel (arrays with ``ndim``, scalars,
    constexprs), which names the arguments. Facts on arguments and tensor views no live op
    reads are left out (:func:`live_uses`). Raises ValueError when ``text`` has no entry,
    IRParseError when it is malformed."""
    m = _ENTRY.search(text)
    if not m:
        raise ValueError("no `entry @...(...)` in the Tile IR text")
    live_args, live_views = live_uses(text)
    args = [a for a, _ in _ARG.findall(m["args"])]
    parent = {a["res"]: a["src"] for a in _ASSUME.finditer(text)}
    divs = arg_divisors(text)
    # the layout both frontends use: name each argument
    names, i = {}, 0
    for p in params:
        if p["kind"] == "array" and not p.get("list"):
            nd = p["ndim"]
            names[f"arg{i}"] = f"{p['name']}.base"
            for d in range(nd):
                names[f"arg{i + 1 + d}"] = f"{p['name']}.shape[{d}]"
                names[f"arg{i + 1 + nd + d}"] = f"{p['name']}.stride[{d}]"
            i += 1 + 2 * nd
        elif p["kind"].startswith("scalar"):
            names[f"arg{i}"] = p["name"]
            i += 1
        elif p["kind"] != "constexpr":
            names = {}          # a list of arrays: its layout is not followed here
            break
    if i != len(args):
        names = {}
    out = {}
    for a in args:
        if divs.get(a, 1) > 1 and a in live_args:
            out[names.get(a, f"arg#{a[3:]}")] = f"div_by<{divs[a]}>"
    for v in _VIEW.finditer(text):
        if text.count("\n", 0, v.start()) + 1 not in live_views:
            continue
        base = names.get(_root(v["ptr"], parent), "")
        if not base.endswith(".base"):
            continue
        arr = base[:-len(".base")]
        out[f"{arr}.view"] = "tensor view"
        # a constant extent or stride is an integer operand (or, in the view's type, a number)
        dims = [d for d in v["ty"].split("x")[:-1]]
        tstrides = (v["tstrides"] or "").split(",")
        for kind, ops, ty in (("shape", v["shape"], dims), ("stride", v["strides"] or "", tstrides)):
            # an operand that is a constant, directly or through assumes (``%assume_cst_1_i32``)
            ops = [o.strip() for o in ops.split(",") if o.strip()]
            ops = [(m.group(1) if (m := re.fullmatch(r"cst_(-?\d+)_[a-z]\w*?(?:_\d+)?",
                                                     _root(o.lstrip("%"), parent))) else o) for o in ops]
            for d in range(max(len(ops), len(ty))):
                e = ops[d] if d < len(ops) and re.fullmatch(r"-?\d+", ops[d]) else \
                    (ty[d].strip() if d < len(ty) else "?")
                if re.fullmatch(r"-?\d+", e):
                    out[f"{arr}.{kind}[{d}]"] = f"const {e}"
    return dict(sorted(out.items()))


def compare(ref: dict[str, str], port: dict[str, str]) -> list[tuple[str, str | None, str | None]]:
    """The labels whose fact differs: ``(label, ref fact or None, port fact or None)``. A constant
    extent or stride is compared only for an array both sides read through a tensor view (``<a>.view``):
    an array read by gather / scatter has its constant unit stride folded into pointer arithmetic,
    where no view states it."""
    def comparable(k: str) -> bool:
        if k.endswith(".view"):
            return False
        arr = k.split(".")[0]
        const = (ref.get(k) or "").startswith("const") or (port.get(k) or "").startswith("const")
        return not const or (f"{arr}.view" in ref and f"{arr}.view" in port)
    return [(k, ref.get(k), port.get(k)) for k in sorted(set(ref) | set(port))
            if ref.get(k) != port.get(k) and comparable(k)]


_LOC = re.compile(r"\s*loc\([^()]*(?:\([^()]*\)[^()]*)*\)")


def raw_difference(ref_text: str, port_text: str) -> dict:
    """What the two texts differ in before any normalisation: ``{"identical": True}`` when they
    are the same program up to debug locations (``loc(...)`` and ``#loc`` lines) and the
    entry's name (the bytecode tileiras compiles differs in nothing else), else ``{"identical":
    False, "op_counts": {opname: [ref, port]}}`` for every op whose count (nested regions
    included) differs: the ops the structural diff treats as transparent or merges (``assume``,
    ``make_token``, duplicated views and constants, ``get_tile_block_id`` read twice ...).
    Raises IRParseError."""
    from collections import Counter

    from .parse import parse_tileir

    def bare(text: str) -> str:
        lines = [_LOC.sub("", ln).rstrip() for ln in text.splitlines() if not ln.startswith("#loc")]
        return re.sub(r"entry\s+@[\w$.\-]+", "entry @", "\n".join(ln for ln in lines if ln))

    if bare(ref_text) == bare(port_text):
        return {"identical": True}
    counts = []
    for text in (ref_text, port_text):
        c, work = Counter(), [op for e in parse_tileir(text).entries for op in e.body]
        while work:
            op = work.pop()
            c[op.opname] += 1
            work += [o for r in op.regions for o in r.ops]
        counts.append(c)
    r, p = counts
    return {"identical": False, "op_counts": {k: [r[k], p[k]] for k in sorted(set(r) | set(p)) if r[k] != p[k]}}


def diff_runtime_pair(ref_text: str, port_text: str, params: list[dict], ref_path: str = "ref.tileir",
                      port_path: str = "port.tileir", target: str | None = None,
                      owner: str = "tool") -> dict:
    """The IR diff of a run-time pair: the structural diff (:func:`graph_diff.diff_ir`, which sees
    through ``assume``) plus the launch facts of each side's entry (:func:`entry_facts`).

    Each fact that differs is a ``launch_facts`` finding (severity warn, owner ``owner``: ``tool``
    for facts the launchers derive, never the kernel's) naming the parameter and both facts,
    e.g. ``input.shape[1]: ref none, port div_by<8>``. The structural diff's own warnings about a
    one-sided ``div_by`` assume on an entry value are replaced by these named findings; any other
    finding stays. Returns ``{"verdict": PASS | PASS_WITH_NOTES | FAIL, "owner", "summary",
    "findings": [Finding], "facts": {"ref", "port"}, "facts_differ": [[label, ref, port]]}``.
    ``raw``: :func:`raw_difference` of the two texts. Raises IRParseError (either text
    malformed) or ValueError (no entry)."""
    from tileport.core.verdict import Finding

    from .graph_diff import diff_ir

    res = diff_ir(ref_text, port_text, ref_path, port_path, target)
    rf, pf = entry_facts(ref_text, params), entry_facts(port_text, params)
    differ = compare(rf, pf)
    # every div_by rooted at an entry argument is compared as a fact above (a frontend may state
    # one fact twice, on the argument and on its assume chain: no difference); the structural
    # diff's count-based warnings about one-sided div_by assumes are then replaced
    entry_only = _body_div_by(ref_text) == 0 and _body_div_by(port_text) == 0
    findings = [f for f in res.findings
                if not (f.category == "hint" and (f.message.startswith("assume ops are transparent")
                                                  or (entry_only and "assumes `div_by<" in f.message)))]
    consts = [k for k, a, b in differ if (a or "").startswith("const") or (b or "").startswith("const")]
    if consts:
        # a tensor view whose type differs only because one launcher makes an extent or a stride
        # a constant (cuda-tile: extent 1; both: unit strides) is that launch fact, not a change
        # of meaning: the value is the same at run time
        findings = [Finding("launch_facts", "warn", owner,
                            f"the tensor view differs by a launch-time constant ({', '.join(consts)}): "
                            + f.message[:300], f.ref, f.port)
                    if f.severity == "critical" and "make_tensor_view" in f.message else f for f in findings]
    for label, a, b in differ:
        findings.append(Finding(
            "launch_facts", "warn", owner,
            f"{label}: ref {a or 'none'}, port {b or 'none'} (a launch-time fact only one side's "
            f"launcher states; the compiler may vectorise or drop checks on that side only)"))
    verdict = ("FAIL" if any(f.severity == "critical" for f in findings)
               else "PASS_WITH_NOTES" if any(f.severity == "warn" for f in findings) else "PASS")
    if verdict == "FAIL":
        out_owner, summary = res.owner, res.summary
    elif differ:
        out_owner = owner
        summary = (f"{len(differ)} launch fact(s) differ: "
                   + "; ".join(f"{k} ref {a or 'none'} port {b or 'none'}" for k, a, b in differ[:4])
                   + (" ..." if len(differ) > 4 else ""))
    else:
        out_owner = next((f.owner for f in findings if f.severity == "warn"), None)
        summary = res.summary if verdict != "PASS" else "same Tile IR and the same launch facts"
    return {"verdict": verdict, "owner": out_owner, "summary": summary, "findings": findings,
            "facts": {"ref": rf, "port": pf}, "facts_differ": [list(d) for d in differ],
            "raw": raw_difference(ref_text, port_text)}
