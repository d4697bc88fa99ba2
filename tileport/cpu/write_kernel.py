"""Stage ``write_kernel`` (role: kernel writer).

Backends: ``translator`` -- the deterministic translator (:mod:`tileport.translate`), whose
``Unsupported`` becomes a BLOCKED verdict naming the construct and ``file:line``; ``anthropic`` /
``replay`` -- an LLM kernel writer (:mod:`tileport.core.agents`); ``auto`` -- the translator, then
the LLM when it is BLOCKED. Every backend writes ``src/<kernel>.rs`` and a source map
(``.map.json``: Rust line -> ``kernel.py`` line, variant -> entry name) beside it.
"""
from __future__ import annotations

import json
from pathlib import Path

from tileport.core import agents, source
from tileport.core.verdict import LACKS_RULE, TRANSLATOR, Finding, Verdict, atomic_write_text, loc, write
from tileport.cpu import analyze, reference_ir
from tileport.translate import Unsupported, display_path, translate_entries_per_variant


def run(op_dir, kernel, out_rs, out_json, op, attempt: int = 1, target: str = "sm_90") -> dict:
    """Translate and write ``out_rs`` (+ ``.map.json`` source map) and a verdict; ``target`` is
    the GPU architecture compiled for (config ``gpu_target``, keys the port's hints).

    Verdict PASS, or BLOCKED naming the construct and file:line: owner ``tool`` when the
    translator lacks a rule for a construct (the kernel is not at fault), ``kernel`` when the
    operator's input is bad (syntax, manifest) or cuTile Python itself refuses the kernel
    (:func:`tileport.cpu.reference_ir.cutile_refusal`, quoted, as the analysis says it). The
    previous ``out_rs`` is left untouched when translation fails (an empty placeholder is
    written only if none exists, so downstream rules can still run and report BLOCKED)."""
    out_rs = Path(out_rs)
    try:
        (src, smap, entries), blocked = translate_entries_per_variant(op_dir, kernel, target)
    except Unsupported as exc:
        if not out_rs.exists():
            atomic_write_text(out_rs, f"// BLOCKED: {exc}\n")
        # the translator's limits are the tool's; a manifest finding at the analysis gate stays
        # the manifest's (and a bad kernel the kernel's)
        owner = getattr(exc, "owner", None) or "tool"
        msg = f"{LACKS_RULE}: {exc}" if owner == "tool" else str(exc)
        ref = loc(exc.file, exc.line, exc.construct)
        refused = reference_ir.cutile_refusal(op_dir, kernel) if owner == "tool" else None
        if refused:
            # cuTile Python refuses the reference too: the kernel's, as the analysis says
            owner, kpy = "kernel", source.kernel_py(op_dir)
            msg = (f"{kpy}:{refused['line'] or exc.line}: cuTile Python itself refuses variant "
                   f"{refused['variant']}: {refused['message']}")
            ref = loc(kpy, refused["line"] or exc.line)
        return write(Verdict(stage="write_kernel", op=op, kernel=kernel, verdict="BLOCKED",
                             owner=owner, attempt=attempt, summary=msg,
                             findings=[Finding("unsupported" if owner == "tool" else "build", "critical", owner,
                                               msg, ref=ref)],
                             details={"backend": TRANSLATOR, "construct": exc.construct}),
                     out_json)
    except (analyze.AnalysisError, ValueError) as exc:
        if not out_rs.exists():
            atomic_write_text(out_rs, f"// BLOCKED: {exc}\n")
        owner = getattr(exc, "owner", "kernel")     # import_source: an import tileport could not do
        return write(Verdict(stage="write_kernel", op=op, kernel=kernel, verdict="BLOCKED",
                             owner=owner, attempt=attempt, summary=str(exc),
                             findings=[Finding("input", "critical", owner, str(exc))],
                             details={"backend": "translator"}), out_json)
    atomic_write_text(out_rs, src)
    atomic_write_text(str(out_rs) + ".map.json", json.dumps(
        {"rust": str(out_rs), "python": display_path(source.kernel_py(op_dir)),
         "lines": [[r, p] for r, p in smap], "entries": entries}) + "\n")
    details, findings = {"backend": "translator"}, []
    summary = f"translated {kernel} ({src.count(chr(10))} lines)"
    if blocked:
        details["blocked_variants"] = blocked_variants(op_dir, kernel, blocked)
        findings = [Finding("unsupported" if b["owner"] == "tool" else "build", "warn", b["owner"],
                            f"variant {v} BLOCKED: {b['summary']}", ref=b["ref"])
                    for v, b in details["blocked_variants"].items()]
        summary += (f"; {len(blocked)} variant(s) BLOCKED, the other {len(entries)} translated: "
                    f"{', '.join(blocked)} (first: {findings[0].message})")
    return write(Verdict(stage="write_kernel", op=op, kernel=kernel, verdict="PASS", owner=None,
                         attempt=attempt, summary=summary[:2000], details=details, findings=findings,
                         artifacts={"rust": str(out_rs), "source_map": str(out_rs) + ".map.json"}),
                 out_json)


def blocked_variants(op_dir, kernel: str, blocked: dict) -> dict[str, dict]:
    """``{variant id: {"owner", "summary", "ref"}}`` for the variants the translator left out
    (:func:`tileport.translate.translate_per_variant`): owner ``tool`` with "the translator
    lacks a rule: file:line: construct: reason", or ``kernel`` quoting cuTile when cuTile Python
    itself refuses that variant (:func:`tileport.cpu.reference_ir.cutile_refusal`)."""
    out = {}
    for v, exc in blocked.items():
        refused = reference_ir.cutile_refusal(op_dir, kernel, only=[v])
        if refused:
            kpy = source.kernel_py(op_dir)
            out[v] = {"owner": "kernel", "ref": loc(kpy, refused["line"] or exc.line),
                      "summary": (f"{kpy}:{refused['line'] or exc.line}: cuTile Python itself refuses variant "
                                  f"{v}: {refused['message']}")}
        else:
            out[v] = {"owner": "tool", "ref": loc(exc.file, exc.line, exc.construct),
                      "summary": f"{LACKS_RULE}: {exc}"}
    return out


# ---------------------------------------------------------------------------------------------
# LLM backends of the kernel-writer role (tileport.core.agents); the translator above stays the
# deterministic backend. The LLM's file is only text: rust_build, rust_ir and ir_diff decide.

BACKENDS = ("translator", "anthropic", "replay", "auto")


def _llm_fields(op_dir, kernel, op, attempt, analysis_json, ref_ir, previous: str) -> dict:
    an = json.loads(Path(analysis_json).read_text())["details"]
    kinfo = next((k for k in an.get("kernels", []) if k["name"] == kernel), {})
    variant = an["variants"][0]["id"] if an.get("variants") else "?"
    return {"op": op, "kernel": kernel, "attempt": attempt, "variant": variant,
            "reference_source": source.kernel_py(op_dir).read_text(),
            # the LLM analyser's checked notes, when one ran (absent otherwise: the prompt, and so
            # the request hash of every earlier transcript, stays as it was)
            "analysis": json.dumps({"kernel": kinfo, "variants": an.get("variants", []),
                                    **({"analyser_notes": an["llm"]["notes"]} if (an.get("llm") or {}).get("notes")
                                       else {})}, indent=1),
            "reference_ir": Path(ref_ir).read_text() if ref_ir and Path(ref_ir).exists() else "(none)",
            "previous": previous}


def run_backend(op_dir, kernel, out_rs, out_json, op, backend: str = "translator", *,
                settings=None, analysis_json=None, ref_ir=None, results=None, replay_dir=None,
                attempt: int = 1, previous: str = "", target: str = "sm_90") -> dict:
    """Stage ``write_kernel`` with config.yaml's kernel-writer backend.

    ``translator``: :func:`run`. ``anthropic`` / ``replay``: one exchange (:mod:`tileport.core.agents`)
    with ``prompts/kernel_writer.md`` filled from kernel.py, the analysis and the reference IR
    (``ref_ir``) plus ``previous`` (the previous attempt's failure, IR diff and diagnosis, as
    :func:`tileport.flow.route.decide` words it; empty on attempt 1); its transcript goes to
    ``results/<op>/transcripts/write_kernel/<kernel>/attempt-<n>.json`` (replay reads those under
    ``replay_dir`` and writes none). ``auto``: the translator first, the LLM only when it is
    BLOCKED. Verdicts: PASS (a file was written: later stages judge it), FAIL with
    ``fail_class: agent_output`` (no parsable output/VERDICT line), BLOCKED (the agent says a
    construct has no equivalent), ERROR with ``fail_class: env`` (no key, bad key, unknown model,
    network, replay miss). Never raises for those.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown kernel-writer backend '{backend}' (one of {BACKENDS})")
    results = Path(results) if results else Path(out_json).parents[4]
    if backend in ("translator", "auto"):
        d = run(op_dir, kernel, out_rs, out_json, op, attempt, target)
        if backend == "translator" or d["verdict"] == "PASS":
            return d
        previous = previous or ("The deterministic translator could not translate it: "
                                + d["summary"])
    llm = "replay" if backend == "replay" else "anthropic"
    tpath = agents.transcript_path(results, op, f"write_kernel/{kernel}", attempt)
    base = dict(stage="write_kernel", op=op, kernel=kernel, attempt=attempt)

    def placeholder(msg):
        if not Path(out_rs).exists():
            atomic_write_text(out_rs, f"// {msg}\n")

    try:
        fields = _llm_fields(op_dir, kernel, op, attempt, analysis_json, ref_ir, previous)
        # no absolute paths of this checkout in a prompt: replay must work from any clone
        fields = agents.without_repo(fields, Path(op_dir).resolve().parent.parent)
        req = agents.request_for("kernel_writer", fields, settings)
        be = (agents.ReplayBackend(replay_dir or results) if llm == "replay"
              else agents.AnthropicBackend(settings))
        t = agents.exchange(req, be, tpath, settings, stage="write_kernel", op=op, attempt=attempt,
                            record=llm != "replay")
    except (agents.AgentError, OSError, ValueError, KeyError) as exc:
        placeholder(f"ERROR: {exc}")
        fc = getattr(exc, "fail_class", "env")
        return write(Verdict(**base, verdict="ERROR", owner="env", fail_class=fc, summary=str(exc)[:800],
                             findings=[Finding("environment", "critical", "env", str(exc)[:1500])],
                             details={"backend": llm}), out_json)
    info = {"backend": llm, "model": t["model"], "usage": t["usage"], "cost_usd": t["cost_usd"],
            "transcript": str(tpath), "request_hash": t["request_hash"]}
    try:
        parsed = agents.parse_reply(t["reply"], "rust")
    except agents.AgentOutputError as exc:
        placeholder(f"agent_output: {exc}")
        return write(Verdict(**base, verdict="FAIL", owner="kernel", fail_class="agent_output",
                             summary=f"the LLM's reply is unusable: {exc}",  # same words live and in replay
                             findings=[Finding("input", "critical", "kernel", f"agent output: {exc}")],
                             details=info), out_json)
    info["agent_claim"] = {"verdict": parsed.verdict, "validation": parsed.validation}
    if parsed.verdict == "BLOCKED":
        placeholder("BLOCKED by the agent")
        return write(Verdict(**base, verdict="BLOCKED", owner="kernel", summary=(
            f"the LLM kernel writer says BLOCKED: {parsed.validation.get('unsupported', [])}")[:800],
            details=info), out_json)
    atomic_write_text(out_rs, parsed.output if parsed.output.endswith("\n") else parsed.output + "\n")
    atomic_write_text(str(out_rs) + ".map.json", json.dumps(
        {"rust": str(out_rs), "python": display_path(source.kernel_py(op_dir)), "lines": [],
         "entries": {}}) + "\n")
    return write(Verdict(**base, verdict="PASS", summary=(
        f"{llm} wrote {kernel} ({parsed.output.count(chr(10)) + 1} lines; the agent claims "
        f"{parsed.verdict}, to be checked by rust_build/rust_ir/ir_diff)"), details=info,
        artifacts={"rust": str(out_rs), "transcript": str(tpath)}), out_json)
