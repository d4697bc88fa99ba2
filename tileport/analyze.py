"""Stage ``analyze``: read a cuTile Python operator without running it.

Parses ``operators/<op>/kernel.py`` with :mod:`ast` (no import, no GPU) and the manifest,
and writes ``results/<op>/analysis.json``: a verdict document whose ``details`` hold the
kernels, their parameters with roles, dtypes, constexprs, variants, the launch grid rule,
the cuTile calls used (with padding modes, reduction axes, mma, loops) and the
unsupported constructs with ``file:line``. Verdict PASS, or BLOCKED (unsupported construct,
syntax error, manifest/kernel mismatch), or ERROR (the manifest itself is malformed).
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from . import constructs as C
from . import manifest as M
from .verdict import Finding, Verdict, loc, write


class AnalysisError(ValueError):
    """kernel.py cannot be analysed (syntax error, no kernels); message names file:line."""


def tile_alias(tree: ast.Module) -> str:
    """The local name ``cuda.tile`` is imported as: ``ct`` for ``import cuda.tile as ct`` or
    ``from cuda import tile as ct``.

    Raises:
        AnalysisError: when the module never imports ``cuda.tile`` under a plain name.
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "cuda.tile":
                    if not a.asname:
                        raise AnalysisError(f"line {node.lineno}: `import cuda.tile` without an "
                                            f"alias: write `import cuda.tile as ct`")
                    return a.asname
        if isinstance(node, ast.ImportFrom) and node.module == "cuda":
            for a in node.names:
                if a.name == "tile":
                    return a.asname or "tile"
    raise AnalysisError("kernel.py does not `import cuda.tile as <alias>`")


def _is_ct(node: ast.AST, alias: str, attr: str | None = None) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == alias and (attr is None or node.attr == attr))


def _constant_type(sub: ast.Subscript) -> str:
    """'int' | 'float' | 'bool' of a ``ct.Constant[T]`` annotation (other T: 'int')."""
    t = sub.slice
    return t.id if isinstance(t, ast.Name) and t.id in ("int", "float", "bool") else "int"


def constexpr_aliases(tree: ast.Module, alias: str) -> dict[str, str]:
    """Module-level names bound to ``ct.Constant[T]`` (e.g. ``ConstInt``) -> 'int'/'float'/'bool'."""
    out = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Subscript)
                and _is_ct(node.value.value, alias, "Constant")):
            out[node.targets[0].id] = _constant_type(node.value)
    return out


def kernel_functions(tree: ast.Module, alias: str) -> list[ast.FunctionDef]:
    """Functions decorated with ``@ct.kernel`` (with or without arguments)."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if _is_ct(target, alias, "kernel"):
                    out.append(node)
    return out


def param_type(arg: ast.arg, alias: str, const_aliases: dict[str, str]) -> tuple[str, str | None]:
    """(kind, constexpr type 'int'/'float'/'bool' or None) of a kernel parameter."""
    ann = arg.annotation
    if ann is None:
        return "array", None
    if isinstance(ann, ast.Name) and ann.id in const_aliases:
        return "constexpr", const_aliases[ann.id]
    if isinstance(ann, ast.Subscript) and _is_ct(ann.value, alias, "Constant"):
        return "constexpr", _constant_type(ann)
    if isinstance(ann, ast.Name) and ann.id == "float":
        return "scalar_f32", None
    if isinstance(ann, ast.Name) and ann.id == "int":
        return "scalar_i32", None
    return "array", None


def tile_dim_constexprs(fn: ast.FunctionDef, alias: str) -> set[str]:
    """Names used as entries of tile-shape tuples (``shape=`` of load/num_tiles, the shape of
    full/zeros/ones/reshape)."""
    out = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and _is_ct(n.func, alias):
            shp = None
            if n.func.attr in ("load", "num_tiles"):
                shp = _kw(n, "shape", 2)
            elif n.func.attr in ("full", "zeros", "ones"):
                shp = n.args[0] if n.args else _kw(n, "shape")
            elif n.func.attr == "reshape":
                shp = n.args[1] if len(n.args) > 1 else _kw(n, "shape")
            if isinstance(shp, ast.Tuple):
                out |= {e.id for e in shp.elts if isinstance(e, ast.Name)}
    return out


def static_test(test: ast.AST, constexprs: set[str]) -> bool:
    """True when an ``if`` test only reads constexpr parameters and literals (``BM == 1``,
    ``GELU and not FAST``): cuTile evaluates it at compile time, so it selects code per variant."""
    ok = (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Load, ast.And, ast.Or,
          ast.Not, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
    for n in ast.walk(test):
        if not isinstance(n, ok) or (isinstance(n, ast.Name) and n.id not in constexprs):
            return False
    return True


def _kw(call: ast.Call, name: str, pos: int | None = None):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if pos is not None and len(call.args) > pos:
        return call.args[pos]
    return None


def calls_used(fn: ast.FunctionDef, alias: str, path: str,
               constexprs: set[str] = frozenset(),
               helpers: set[str] = frozenset()) -> tuple[list[dict], list[dict]]:
    """The cuTile calls and control flow of one kernel, and its unsupported constructs.

    Returns (calls, unsupported); each item has ``line`` (1-based, in ``path``) and a
    description. Unsupported: ``ct.*`` functions outside :data:`constructs.SUPPORTED_CALLS`,
    ``while``, ``if``, ``with``, ``try``, nested functions, non-``range`` loops, calls to
    anything other than ``ct.*``/``range``.
    """
    calls, unsupported = [], []
    body_nodes = [n for stmt in fn.body for n in ast.walk(stmt)]
    for node in body_nodes:
        line = getattr(node, "lineno", None)
        if isinstance(node, ast.Call):
            if _is_ct(node.func, alias) or _is_tile_method(node.func, alias):
                name = node.func.attr
                item = {"call": f"{alias}.{name}", "line": line}
                if name in ("load", "store", "gather", "scatter"):
                    arr = node.args[0].id if node.args and isinstance(node.args[0], ast.Name) else None
                    item["array"] = arr
                if name in ("load", "store"):
                    pm = _kw(node, "padding_mode")
                    item["padding"] = pm.attr if isinstance(pm, ast.Attribute) else "UNDETERMINED"
                    shp = _kw(node, "shape", 2)
                    if shp is not None:
                        item["tile_shape"] = ast.unparse(shp)
                    for hint in ("latency", "allow_tma"):
                        if _kw(node, hint) is not None:
                            item[hint] = ast.unparse(_kw(node, hint))
                if name in C.REDUCTIONS:
                    ax = _kw(node, "axis", 1)
                    item["axis"] = ast.unparse(ax) if ax is not None else None
                    kd = _kw(node, "keepdims")
                    item["keepdims"] = ast.unparse(kd) if kd is not None else "False"
                calls.append(item)
                if name not in C.SUPPORTED_CALLS:
                    unsupported.append({"construct": f"{alias}.{name}", "line": line,
                                        "reason": "no translation rule for this cuTile call"})
            elif isinstance(node.func, ast.Name) and node.func.id in C.BUILTINS:
                pass
            elif isinstance(node.func, ast.Name) and node.func.id in helpers:
                calls.append({"call": f"helper {node.func.id}", "line": line})
            else:
                unsupported.append({"construct": ast.unparse(node.func), "line": line,
                                    "reason": "call to a non-cuTile function inside a kernel"})
        elif isinstance(node, ast.For):
            it = node.iter
            is_range = (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                        and it.func.id == "range" and 1 <= len(it.args) <= 3)
            calls.append({"call": "for-range" if is_range else "for", "line": line,
                          "target": ast.unparse(node.target)})
            if not is_range or not isinstance(node.target, ast.Name) or node.orelse:
                unsupported.append({"construct": "for " + ast.unparse(node.iter), "line": line,
                                    "reason": "only `for <name> in range(...)` without else"})
        elif isinstance(node, ast.If) and static_test(node.test, constexprs):
            calls.append({"call": "if-constexpr", "line": line, "test": ast.unparse(node.test)})
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            # run-time control flow (the translator checks the condition's kind)
            calls.append({"call": type(node).__name__.lower(), "line": line, "test": ast.unparse(node.test)})
        elif isinstance(node, (ast.With, ast.Try, ast.FunctionDef, ast.Lambda,
                               ast.ListComp, ast.GeneratorExp, ast.Subscript)):
            if isinstance(node, ast.Subscript) and _is_shape_subscript(node):
                calls.append({"call": "array.shape[i]", "line": line})
                continue
            if isinstance(node, ast.Subscript) and _is_newaxis_subscript(node):
                calls.append({"call": "tile[new axes]", "line": line})
                continue
            unsupported.append({"construct": type(node).__name__.lower(), "line": line,
                                "reason": "construct not translated (yet)"})
    calls.sort(key=lambda c: c["line"] or 0)
    unsupported.sort(key=lambda c: c["line"] or 0)
    return calls, unsupported


def _is_tile_method(func: ast.AST, alias: str) -> bool:
    """``t.astype(...)``, ``t.reshape(...)`` ...: a Tile method spelling a ct function."""
    return (isinstance(func, ast.Attribute) and func.attr in C.TILE_METHODS
            and not (isinstance(func.value, ast.Name) and func.value.id == alias))


def _is_newaxis_subscript(node: ast.Subscript) -> bool:
    """``x[:, None]``, ``x[None, :, :]``: new unit axes of a tile (``ct.expand_dims``)."""
    elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return all((isinstance(s, ast.Constant) and s.value is None)
               or (isinstance(s, ast.Slice) and s.lower is None and s.upper is None and s.step is None)
               for s in elts) and any(isinstance(s, ast.Constant) for s in elts)


def _is_shape_subscript(node: ast.Subscript) -> bool:
    return (isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int))


def analyse(op_dir: str | Path) -> dict:
    """Analyse one operator folder and return the analysis dict (the verdict's details).

    Raises:
        manifest.ManifestError: malformed manifest (file:line: key: cause).
        AnalysisError: unreadable kernel.py, syntax error (file:line), no ``@ct.kernel``.
    """
    op_dir = Path(op_dir)
    man = M.load(op_dir / "manifest.yaml")
    mpath = Path(man["_path"])
    mtext = mpath.read_text()      # for the line numbers of manifest findings
    kpath = op_dir / "kernel.py"
    try:
        src = kpath.read_text()
    except OSError as exc:
        raise AnalysisError(f"{kpath}: cannot read: {exc.strerror}") from None
    try:
        tree = ast.parse(src, filename=str(kpath))
    except SyntaxError as exc:
        raise AnalysisError(f"{kpath}:{exc.lineno or 1}: syntax error: {exc.msg}") from None
    except ValueError as exc:          # e.g. NUL bytes in the source
        raise AnalysisError(f"{kpath}:1: syntax error: {exc}") from None
    try:
        alias = tile_alias(tree)
    except AnalysisError as exc:
        m = re.match(r"line (\d+): (.*)", str(exc))
        raise AnalysisError(f"{kpath}:{m.group(1) if m else 1}: {m.group(2) if m else exc}") from None
    consts = constexpr_aliases(tree, alias)
    fns = {f.name: f for f in kernel_functions(tree, alias)}
    kernels, unsupported = [], []
    for kname, kman in man["kernels"].items():
        if kname not in fns:
            unsupported.append({"construct": f"kernel {kname}", "file": str(mpath),
                                "line": M._yaml_line(mtext, ["kernels", kname]) or 1,
                                "reason": f"manifest lists kernel '{kname}' but kernel.py has no "
                                          f"@{alias}.kernel of that name (has {sorted(fns)})"})
            continue
        fn = fns[kname]
        params = []
        cfg_keys = list(man["configs"][0])
        for a in fn.args.args:
            kind, ctype = param_type(a, alias, consts)
            p = {"name": a.arg, "kind": kind, "line": a.lineno}
            if ctype:
                p["ctype"] = ctype
            if kind == "array":
                spec = kman["arrays"].get(a.arg)
                if spec is None:
                    unsupported.append({"construct": f"parameter {a.arg}", "line": a.lineno,
                                        "file": str(kpath),
                                        "reason": f"not in the manifest's kernels.{kname}.arrays and "
                                                  "not annotated: list arrays there, annotate "
                                                  "scalars (`x: float` / `n: int`)"})
                else:
                    p.update(ndim=spec["ndim"], role=spec["role"], dtype="{dtype}")
            elif kind == "constexpr":
                if a.arg not in cfg_keys:
                    unsupported.append({"construct": f"constexpr {a.arg}", "line": a.lineno,
                                        "file": str(kpath),
                                        "reason": f"constexpr not set by the manifest configs {cfg_keys}"})
                else:
                    want = {"int": int, "float": (int, float), "bool": bool}[ctype]
                    bad = [c[a.arg] for c in man["configs"]
                           if not isinstance(c[a.arg], want)
                           or (ctype != "bool" and isinstance(c[a.arg], bool))
                           or (ctype == "int" and c[a.arg] < 1)]
                    if bad:
                        unsupported.append({"construct": f"constexpr {a.arg}", "line": a.lineno,
                                            "file": str(kpath),
                                            "reason": f"declared ct.Constant[{ctype}] "
                                                      f"{'(a positive int) ' if ctype == 'int' else ''}"
                                                      f"but the manifest configs give {bad}"})
            else:
                p["dtype"] = "f32" if kind == "scalar_f32" else "i32"
            params.append(p)
        cnames = {p["name"] for p in params if p["kind"] == "constexpr"}
        helpers = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in fns}
        calls, unsup = calls_used(fn, alias, str(kpath), cnames, helpers)
        # the manifest describes exactly the kernel's parameters
        pnames = {a.arg for a in fn.args.args}
        for extra in sorted(set(kman["arrays"]) - pnames):
            unsupported.append({"construct": f"array {extra}", "file": str(mpath),
                                "line": M._yaml_line(mtext, ["kernels", kname, "arrays", extra]) or 1,
                                "reason": f"manifest lists array '{extra}' but {kname} has no such parameter"})
        scal = {p["name"]: p["dtype"] for p in params if p["kind"].startswith("scalar")}
        for name, dt in kman.get("scalars", {}).items():
            if name not in scal:
                unsupported.append({"construct": f"scalar {name}", "file": str(mpath),
                                    "line": M._yaml_line(mtext, ["kernels", kname, "scalars", name]) or 1,
                                    "reason": f"manifest lists scalar '{name}' but {kname} has no "
                                              f"`{name}: float|int` parameter"})
            elif scal[name] != dt:
                unsupported.append({"construct": f"scalar {name}", "file": str(mpath),
                                    "line": M._yaml_line(mtext, ["kernels", kname, "scalars", name]) or 1,
                                    "reason": f"manifest says {dt}, the kernel annotates {scal[name]}"})
        # tile dimensions must be powers of two (cuTile's rule); check the constexprs used there
        for name in sorted(tile_dim_constexprs(fn, alias) & cnames):
            for i, cfg in enumerate(man["configs"]):
                v = cfg.get(name)
                if isinstance(v, int) and not isinstance(v, bool) and v & (v - 1):
                    unsupported.append({"construct": f"constexpr {name}={v}", "file": str(mpath),
                                        "line": M._yaml_line(mtext, ["configs", i, name]) or 1,
                                        "reason": f"{name} sets a tile dimension in {kname}, and "
                                                  f"tile dimensions must be powers of two"})
        for u in unsup:
            # a valid cuTile construct the translator has no rule for: the tool must act
            u["file"], u["owner"] = str(kpath), "tool"
        unsupported.extend(unsup)
        stored = {c.get("array") for c in calls if c["call"].endswith((".store", ".scatter"))}
        loaded = {c.get("array") for c in calls if c["call"].endswith((".load", ".gather"))}
        for p in params:
            if p["kind"] == "array" and "role" in p:
                want = p["role"]
                got = ("inout" if p["name"] in stored and p["name"] in loaded else
                       "output" if p["name"] in stored else "input")
                if want != got:
                    unsupported.append({"construct": f"parameter {p['name']}", "line": p["line"],
                                        "file": str(kpath),
                                        "reason": f"manifest role '{want}' but the kernel "
                                                  f"{'stores to' if got != 'input' else 'only loads'} it"})
        kernels.append({
            "name": kname, "line": fn.lineno, "params": params, "calls": calls,
            "grid": kman["grid"], "loops": sum(1 for c in calls if c["call"].startswith("for")),
        })
    # every constexpr the configs set must be a constexpr parameter of some kernel
    used = {p["name"] for k in kernels for p in k["params"] if p["kind"] == "constexpr"}
    for name in man["configs"][0]:
        if kernels and name not in used:
            unsupported.append({"construct": f"constexpr {name}", "file": str(mpath),
                                "line": M._yaml_line(mtext, ["configs", 0, name]) or 1,
                                "reason": f"the configs set {name} but no kernel takes a "
                                          f"`{name}: ct.Constant[...]` parameter"})
    return {
        "op": man["op"],
        "kernel_file": str(kpath),
        "manifest": man["_path"],
        "tile_alias": alias,
        "kernels": kernels,
        "dtypes": man["dtypes"],
        "constexprs": list(man["configs"][0]),
        "variants": [{"id": v.id, "dtype": v.dtype, "constexprs": v.constexprs}
                     for v in M.variants(man)],
        "hints": man.get("hints", {}),
        "unsupported": unsupported,
    }


def run(op_dir: str | Path, out_json: str | Path, op: str) -> dict:
    """Analyse ``op_dir`` and write ``out_json`` (a verdict). Never raises on bad input."""
    try:
        details = analyse(op_dir)
    except M.ManifestError as exc:
        return write(Verdict(stage="analyze", op=op, verdict="ERROR", owner="kernel",
                             summary=str(exc), findings=[Finding(
                                 "manifest", "critical", "kernel", str(exc),
                                 ref=_loc_from_msg(str(exc)))]), out_json)
    except AnalysisError as exc:
        cat = "syntax" if "syntax error" in str(exc) else "input"
        return write(Verdict(stage="analyze", op=op, verdict="BLOCKED", owner="kernel",
                             summary=str(exc), findings=[Finding(
                                 cat, "critical", "kernel", str(exc), ref=_loc_from_msg(str(exc)))]),
                     out_json)
    findings = [Finding("unsupported", "critical", u.get("owner", "kernel"),
                        f"{u['file']}:{u['line']}: {u['construct']}: {u['reason']}",
                        ref=loc(u["file"], u["line"], u["construct"]))
                for u in details["unsupported"]]
    verdict = "BLOCKED" if findings else "PASS"
    n = len(details["variants"])
    summary = (f"{len(details['kernels'])} kernel(s), {n} variant(s)" if not findings else
               f"{len(findings)} unsupported construct(s); first: {findings[0].message}")
    return write(Verdict(stage="analyze", op=op, verdict=verdict,
                         # the user's input first (a manifest/kernel mismatch), else the translator
                         owner=None if verdict == "PASS" else (
                             "kernel" if any(f.owner == "kernel" for f in findings) else "tool"),
                         summary=summary,
                         findings=findings, details=details,
                         artifacts={"kernel": details["kernel_file"]}), out_json)


def _loc_from_msg(msg: str) -> dict | None:
    head = msg.split(": ", 1)[0]
    if ":" in head:
        f, _, ln = head.rpartition(":")
        if ln.isdigit():
            return loc(f, int(ln))
    return loc(head, None)


def run_backend(op_dir: str | Path, out_json: str | Path, op: str, backend: str = "deterministic",
                role: dict | None = None) -> dict:
    """Stage ``analyze`` with the analyser role's backend (config ``roles.analyser``).

    ``deterministic``: :func:`run`. ``anthropic`` / ``replay``: :func:`run`, then an LLM
    (``prompts/analyser.md``) is shown kernel.py, the manifest and that analysis and writes notes
    for the kernel writer on every construct the translator lacks; ``auto``: the same, only when
    :func:`run` says BLOCKED for unsupported constructs. Nothing is asked when the file cannot be
    parsed or the manifest is malformed (no analysis to annotate). ``role``:
    ``{"backend", "settings", "results", "replay_dir"}`` (:func:`tileport.agents.role_config`);
    transcript ``results/<op>/transcripts/analyze/attempt-1.json``.

    tileport checks the reply's ``json`` block against its own parse: the same kernel names with
    the same parameter names in order, and every construct's ``line`` inside kernel.py. A checked
    reply is stored as ``details.llm`` (``notes``, ``constructs``, ``transcript``) and reaches an
    LLM kernel writer's prompt; an unusable or disagreeing reply is ``details.llm.error`` with
    ``fail_class`` agent_output (env for key / network / replay miss) plus a ``warn`` finding.
    The verdict word stays the deterministic analyser's: the notes are advice, tileport's later
    stages judge the port. Never raises on bad input.
    """
    from . import agents
    from .verdict import read

    d = run(op_dir, out_json, op)
    det = d.get("details") or {}
    if backend == "deterministic" or not det.get("kernels") or (backend == "auto" and d["verdict"] != "BLOCKED"):
        return d
    op_dir = Path(op_dir)
    try:
        fields = {"op": op, "reference_source": (op_dir / "kernel.py").read_text(),
                  "manifest": (op_dir / "manifest.yaml").read_text(), "verdict": d["verdict"],
                  "analysis": json.dumps({k: det.get(k) for k in ("kernels", "dtypes", "constexprs", "unsupported")},
                                         indent=1, default=str)[:30000]}
    except OSError:
        return d
    got = agents.consult("analyser", fields, role, op=op, stage="analyze", attempt=1, lang="markdown",
                         repo_root=op_dir.resolve().parent.parent)
    llm = {"backend": got["backend"], **({"transcript": got["transcript"]} if "transcript" in got else {})}
    problem = got.get("error")
    if not problem:
        claim = (got.get("agent_claim") or {}).get("validation") or {}
        problem = _disagreement(claim, det, (op_dir / "kernel.py").read_text().count("\n") + 1)
    if problem:
        llm.update(error=problem[:800], fail_class=got.get("fail_class", "agent_output") if "error" in got
                   else "agent_output")
        d["findings"].append({"category": "input", "severity": "warn", "owner": "tool",
                              "message": f"LLM analyser ({llm['fail_class']}): {problem}"[:1500],
                              "ref": None, "port": None})
    else:
        llm.update(notes=got["output"].strip()[:8000], constructs=claim.get("constructs", [])[:50])
    d["details"]["llm"] = llm
    out = read(out_json)
    out.pop("schema", None)
    return write(Verdict(**{k: out[k] for k in ("stage", "op", "verdict", "summary", "owner")},
                         findings=[Finding(**{k: f.get(k) for k in ("category", "severity", "owner", "message",
                                                                      "ref", "port")}) for f in d["findings"]],
                         details=d["details"], artifacts=out.get("artifacts", {})), out_json)


def _disagreement(claim: dict, det: dict, n_lines: int) -> str:
    """Why an LLM analyser's validation block disagrees with tileport's parse ('' if it does not)."""
    ks = claim.get("kernels")
    if not isinstance(ks, dict):
        return "validation block lacks a 'kernels' object"
    mine = {k["name"]: [p["name"] for p in k["params"]] for k in det["kernels"]}
    if set(ks) != set(mine):
        return f"kernels {sorted(ks)} differ from kernel.py's {sorted(mine)}"
    for k, params in mine.items():
        if ks[k] != params:
            return f"parameters of {k} {ks[k]} differ from kernel.py's {params}"
    cs = claim.get("constructs", [])
    if not isinstance(cs, list):
        return "'constructs' is not a list"
    for c in cs:
        if not isinstance(c, dict) or not isinstance(c.get("line"), int) or not 1 <= c["line"] <= n_lines:
            return f"construct {c!r} names no line of kernel.py (1..{n_lines})"
    return ""
