"""Stage ``analyze``: read a cuTile Python operator without running it.

The front end (:mod:`tileport.model.frontend`) reads the operator once: the manifest and the kernel
file -- its own ``operators/<op>/kernel.py``, or ``results/<op>/src/kernel.py`` when the
manifest names a wheel's module with ``source:`` (:func:`tileport.core.source.kernel_py`; an import
that did not PASS makes the analysis BLOCKED with the import's cause and owner) -- parsed with
:mod:`ast` (no import, no GPU). The analyser reports on that model and asks the translator to
translate each of its kernels (no cargo), so it passes exactly what the translator has rules
for. It writes ``results/<op>/analysis.json``: a verdict document whose ``details`` hold the
kernels, their parameters with roles, dtypes, constexprs, variants, the launch grid rule, the
cuTile constructs used (with padding modes, reduction axes, loops, lines) and the findings with
``file:line``. Verdict PASS, or BLOCKED (a construct the translator lacks, syntax error,
manifest/kernel mismatch), or ERROR (the manifest itself is malformed, or cannot describe a
kernel).

Per kernel (``details.kernels[i]``), what a kernel writer needs: ``params`` in order --
arrays with ``ndim``, ``role``, ``dtype`` (``"{dtype}"`` = the variant's, a code, or a mapping
variant dtype -> code), ``list``, ``alias_group``, ``index_dtype``; scalars with ``kind``
``scalar_<type>``, ``dtype`` (i32/i64/f32) and ``annotated``; constexprs with ``ctype``
(int/float/bool) --, ``constexprs`` (the names its variants set), ``scalars`` ({name: type})
and ``variants`` ([{``id``, ``dtype``, ``constexprs``, ``arrays``: {name: dtype in that
variant}, ``compiler_hints``}]). ``details.variants`` is the union over kernels (each id once).
``details.unsupported`` items carry ``owner`` (``manifest`` for a manifest that disagrees with
the kernel, ``tool`` with ``kind: undescribable`` for what the format cannot say, ``tool`` with
``category: unsupported`` for a construct the translator lacks), ``category`` and ``kernel``;
manifest items come first.
"""
from __future__ import annotations

import json
from pathlib import Path

from tileport.core import agents, source
from tileport.core.verdict import LACKS_RULE, Finding, Verdict, loc, read, write
from tileport.cpu import reference_ir
from tileport.model import frontend, manifest

# the front end's names, as the analyser has always offered them
from tileport.model.frontend import (  # noqa: F401
    AnalysisError,
    array_uses,
    constexpr_aliases,
    constructs_of,
    kernel_functions,
    param_type,
    static_test,
    tile_alias,
    tile_dim_constexprs,
)
from tileport.model.frontend import is_ct as _is_ct  # noqa: F401
from tileport.model.frontend import is_shape_subscript as _is_shape_subscript  # noqa: F401
from tileport.model.frontend import kw as _kw  # noqa: F401
from tileport.translate import Unsupported, translate_per_variant


def analyse(op_dir: str | Path, target: str = "sm_90") -> dict:
    """Analyse one operator folder and return the analysis dict (the verdict's details).

    The front end reads the operator once (:func:`tileport.model.frontend.load`); the translator then
    translates every kernel of that model whose manifest agrees with it, for every
    specialisation its variants need, for the GPU architecture ``target`` (config
    ``gpu_target``) -- its Rust is dropped, no cargo runs -- and each kernel it cannot translate
    adds one item to ``unsupported``: the construct, ``file:line``, the reason, owner ``tool``
    (the translator lacks a rule; the kernel is valid), ``category: unsupported``, the kernel's
    name -- unless cuTile Python itself refuses the kernel
    (:func:`tileport.cpu.reference_ir.cutile_refusal`): then the item is the kernel's (owner
    ``kernel``, ``category: build``, cuTile's message at its line, the refused ``variant``). So
    the analysis passes exactly the kernels the translator has rules for.

    Raises:
        manifest.ManifestError: malformed manifest (file:line: key: cause).
        AnalysisError: unreadable kernel.py, syntax error (file:line), no ``@ct.kernel``.
    """
    model = frontend.load(op_dir)
    details = model.details()
    for k in model.kernels:
        if model.findings_of(k.name):
            continue            # the manifest must agree with the kernel before it is translated
        try:
            (_, _, entries), blocked = translate_per_variant(model, k.name, target)
            details.setdefault("translated_variants", {})[k.name] = list(entries)
            for vid, exc in blocked.items():
                # blocking is per variant: this one is left out, the kernel's others go on
                refused = reference_ir.cutile_refusal(op_dir, k.name, model, only=[vid])
                if refused:
                    details["unsupported"].append({
                        "construct": k.name, "file": details["kernel_file"], "line": refused["line"] or exc.line,
                        "reason": f"cuTile Python itself refuses variant {vid}: {refused['message']}",
                        "owner": "kernel", "category": "build", "kernel": k.name, "variant": vid})
                else:
                    details["unsupported"].append({
                        "construct": exc.construct, "file": exc.file, "line": exc.line, "reason": exc.reason,
                        "owner": getattr(exc, "owner", None) or "tool", "category": "unsupported",
                        "kernel": k.name, "variant": vid})
        except Unsupported as exc:
            owner = getattr(exc, "owner", None) or "tool"
            refused = reference_ir.cutile_refusal(op_dir, k.name, model) if owner == "tool" else None
            if refused:
                # cuTile Python refuses the reference too: the kernel's to fix, in cuTile's words
                kpy = details["kernel_file"]
                details["unsupported"].append({
                    "construct": k.name, "file": kpy, "line": refused["line"] or exc.line,
                    "reason": f"cuTile Python itself refuses variant {refused['variant']}: {refused['message']}",
                    "owner": "kernel", "category": "build", "kernel": k.name,
                    "variant": refused["variant"]})
                continue
            details["unsupported"].append({
                "construct": exc.construct, "file": exc.file, "line": exc.line, "reason": exc.reason,
                "owner": owner, "category": "unsupported", "kernel": k.name})
    return details


def run(op_dir: str | Path, out_json: str | Path, op: str, target: str = "sm_90") -> dict:
    """Analyse ``op_dir`` and write ``out_json`` (a verdict). Never raises on bad input.

    Verdict PASS; BLOCKED when a kernel uses a construct the translator lacks (owner ``tool``:
    the message starts with "the translator lacks a rule"), the manifest disagrees with the
    kernel (owner ``manifest``, listed first) or tileport cannot carry a valid kernel's name
    (:class:`tileport.model.manifest.ToolLimitError`, owner ``tool``); ERROR when the manifest is malformed (owner
    ``manifest``) or cannot describe a kernel at all (owner
    ``tool``: the manifest format lacks the concept; the finding names it and the manifest line).
    """
    try:
        details = analyse(op_dir, target)
    except manifest.ToolLimitError as exc:
        return write(Verdict(stage="analyze", op=op, verdict="BLOCKED", owner="tool",
                             summary=str(exc), findings=[Finding(
                                 "unsupported", "critical", "tool", str(exc),
                                 ref=_loc_from_msg(str(exc)))]), out_json)
    except manifest.ManifestError as exc:
        return write(Verdict(stage="analyze", op=op, verdict="ERROR", owner="manifest",
                             summary=str(exc), findings=[Finding(
                                 "manifest", "critical", "manifest", str(exc),
                                 ref=_loc_from_msg(str(exc)))]), out_json)
    except AnalysisError as exc:
        cat = "syntax" if "syntax error" in str(exc) else "input"
        return write(Verdict(stage="analyze", op=op, verdict="BLOCKED", owner=exc.owner,
                             summary=str(exc), findings=[Finding(
                                 cat, "critical", exc.owner, str(exc), ref=_loc_from_msg(str(exc)))]),
                     out_json)
    findings = [Finding(u.get("category", "unsupported"), "critical", u.get("owner", "kernel"),
                        (f"variant {u['variant']} BLOCKED: " if u.get("variant") and u.get("category") == "unsupported"
                         else "")
                        + ((f"{LACKS_RULE}: " if u.get("category") == "unsupported" and u.get("owner") == "tool"
                           else "") + f"{u['file']}:{u['line']}: {u['construct']}: {u['reason']}"),
                        ref=loc(u["file"], u["line"], u["construct"]))
                for u in details["unsupported"]]
    undescribable = [u for u in details["unsupported"] if u.get("kind") == "undescribable"]
    verdict = "ERROR" if undescribable else "BLOCKED" if findings else "PASS"
    n = len(details["variants"])
    n_man = sum(1 for u in details["unsupported"] if u.get("category") == "manifest")
    n_ref = sum(1 for u in details["unsupported"] if u.get("category") == "build" and u.get("owner") == "kernel")
    if undescribable:
        first = findings[details["unsupported"].index(undescribable[0])]
        summary = f"the manifest cannot describe a kernel: {first.message}"
        owner = "tool"
    elif findings:
        n_un = len(findings) - n_man - n_ref
        parts = [f"{n_man} manifest finding(s)" if n_man else "",
                 f"{n_ref} kernel(s) cuTile Python itself refuses" if n_ref else "",
                 f"{n_un} unsupported construct(s)" if n_un else ""]
        summary = f"{'; '.join(x for x in parts if x)}; first: {findings[0].message}"
        partial = {u["kernel"] for u in details["unsupported"] if u.get("variant")} & set(
            details.get("translated_variants", {}))
        if partial:
            # blocking is per variant: say which variants of those kernels go on
            summary = ("blocked per variant, the others go on ("
                       + "; ".join(f"{k}: {', '.join(details['translated_variants'][k])}" for k in sorted(partial))
                       + f"); {summary}")
        owner = findings[0].owner
    else:
        summary, owner = f"{len(details['kernels'])} kernel(s), {n} variant(s)", None
    return write(Verdict(stage="analyze", op=op, verdict=verdict, owner=owner, summary=summary,
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
                role: dict | None = None, target: str = "sm_90") -> dict:
    """Stage ``analyze`` with the analyser role's backend (config ``roles.analyser``).

    ``deterministic``: :func:`run`. ``anthropic`` / ``replay``: :func:`run`, then an LLM
    (``prompts/analyser.md``) is shown kernel.py, the manifest and that analysis and writes notes
    for the kernel writer on every construct the translator lacks; ``auto``: the same, only when
    :func:`run` says BLOCKED for unsupported constructs. Nothing is asked when the file cannot be
    parsed or the manifest is malformed (no analysis to annotate). ``role``:
    ``{"backend", "settings", "results", "replay_dir"}`` (:func:`tileport.core.agents.role_config`);
    transcript ``results/<op>/transcripts/analyze/attempt-1.json``.

    tileport checks the reply's ``json`` block against its own parse: the same kernel names with
    the same parameter names in order, and every construct's ``line`` inside kernel.py. A checked
    reply is stored as ``details.llm`` (``notes``, ``constructs``, ``transcript``) and reaches an
    LLM kernel writer's prompt; an unusable or disagreeing reply is ``details.llm.error`` with
    ``fail_class`` agent_output (env for key / network / replay miss) plus a ``warn`` finding.
    The verdict word stays the deterministic analyser's: the notes are advice, tileport's later
    stages judge the port. Never raises on bad input.
    """
    d = run(op_dir, out_json, op, target)
    det = d.get("details") or {}
    if backend == "deterministic" or not det.get("kernels") or (backend == "auto" and d["verdict"] != "BLOCKED"):
        return d
    op_dir = Path(op_dir)
    try:
        fields = {"op": op, "reference_source": source.kernel_py(op_dir).read_text(),
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
        problem = _disagreement(claim, det, source.kernel_py(op_dir).read_text().count("\n") + 1)
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

