"""Stage ``check_kernel``: tileport's own verdict on one writer attempt (:func:`check`) -- rustc's
check of its crate, and per variant the port's Tile IR, the IR diff against the reference and
its diagnosis, written in the stage layout :func:`tileport.flow.route.publish_variants` publishes
-- and the LLM IR diagnoser's advice (:func:`llm_diagnosis`). Its own module: the routing stages
(:mod:`tileport.flow.route`) run once per attempt or kernel and need none of the compilers'
modules this one imports (a job's imports are a good part of its cost: issue 32).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from tileport.core import agents, source
from tileport.core.verdict import Finding, Verdict, VerdictError, read, write
from tileport.cpu import ir_diagnose, rust_ir
from tileport.flow.route import VARIANT_STAGES
from tileport.ir_diff import stage as ir_diff_stage


def check(op_dir, op: str, kernel: str, n: int, write_json, ref_dir, variants: list[str],
          out_json, target: str = "sm_90", diagnoser: dict | None = None) -> dict:
    """Verdict of tileport on one writer attempt (stage ``check_kernel``).

    ``write_json``: the attempt's writer verdict, beside ``rust/src/<kernel>.rs`` of its crate.
    ``ref_dir``: ``results/<op>/ref/<kernel>`` holding ``<variant>.tileir`` + ``.json`` of the
    reference Tile IR. Has rustc check the crate (:func:`tileport.cpu.rust_ir.build`), then for
    every variant writes the three per-variant stage verdicts into ``<attempt dir>/<stage>/``
    (:data:`VARIANT_STAGES`): the port's Tile IR (:func:`tileport.cpu.rust_ir.dump`, BLOCKED
    when nothing was built), the IR diff (:func:`tileport.ir_diff.stage.run_upstream_checked`,
    BLOCKED when a side has no IR) and its diagnosis (:func:`tileport.cpu.ir_diagnose.run`).
    :func:`accept` publishes exactly these files: the accepted kernel is never compiled twice.

    Verdicts: PASS (every variant's IR diff PASS / PASS_WITH_NOTES); FAIL ``fail_class kernel``
    (a rustc error, an IR diff FAIL or a dump failure: the port is wrong) or ``agent_output``
    (the writer's reply was unusable, nothing to build); BLOCKED (writer or reference BLOCKED);
    ERROR ``fail_class env`` (cargo, headers, network, key: nothing a new kernel can fix).
    ``details.variants`` maps each variant to its diff verdict; ``details.diagnoses`` holds the
    diagnoser's advice for the failing ones. Never raises on bad input.
    """
    adir = Path(write_json).parent
    base = dict(stage="check_kernel", op=op, kernel=kernel, attempt=int(n))
    # an earlier check's per-variant verdicts go first, before anything that can end this one:
    # accept_kernel publishes what these folders hold, and a check that stops early (an
    # unreadable writer verdict, a crash in the build) must leave nothing of a previous pass
    dirs = {s: adir / s for s in VARIANT_STAGES}
    for s in VARIANT_STAGES:
        shutil.rmtree(dirs[s], ignore_errors=True)
        dirs[s].mkdir(parents=True)
    try:
        wv = read(write_json)
    except VerdictError as exc:
        return write(Verdict(**base, verdict="ERROR", owner="tool", fail_class="env", summary=str(exc)),
                     out_json)
    crate = adir / "rust"
    b = rust_ir.build(op, crate, {kernel: write_json}, adir / "build.json", adir / "build.log")
    per, dumps, diffs, diags = {}, {}, {}, {}
    # variants the writer left out (blocking is per variant): BLOCKED in each per-variant stage
    # with the writer's reason and owner; the others are dumped, diffed and diagnosed
    wblocked = ((wv.get("details") or {}).get("blocked_variants") or {}) if wv["verdict"] == "PASS" else {}
    r = dirs["rust_ir"]
    # every variant's Tile IR from one dumper process (rust_ir.dump_many), then diff and diagnosis
    dumps = rust_ir.dump_many(op_dir, op, kernel, [(v, r / f"{v}.tileirbc", r / f"{v}.tileir", r / f"{v}.json")
                                                   for v in variants if v not in wblocked],
                              adir / "build.json", target=target)
    for v in variants:
        if v in wblocked:
            wb = wblocked[v]
            for s, stage_name in (("rust_ir", "rust_ir"), ("ir_diff", "ir_diff"), ("diagnosis", "ir_diagnose")):
                write(Verdict(stage=stage_name, op=op, kernel=kernel, variant=v, verdict="BLOCKED", owner=wb["owner"],
                              attempt=int(n), summary=f"write_kernel left variant {v} out: {wb['summary']}"[:1500],
                              findings=[Finding("unsupported" if wb["owner"] == "tool" else "build", "critical",
                                                wb["owner"], wb["summary"][:3000], ref=wb.get("ref"))]),
                      dirs[s] / f"{v}.json")
            continue
        try:
            diffs[v] = ir_diff_stage.run_upstream_checked(ref_dir, r, v, dirs["ir_diff"] / f"{v}.json", op, kernel,
                                                          attempt=int(n), target=target)
        except VerdictError as exc:
            diffs[v] = write(Verdict(stage="ir_diff", op=op, kernel=kernel, variant=v, verdict="ERROR",
                                     owner="tool", attempt=int(n), summary=str(exc)[:1500],
                                     findings=[Finding("input", "critical", "tool", str(exc)[:1500])]),
                             dirs["ir_diff"] / f"{v}.json")
        diags[v] = ir_diagnose.run(dirs["ir_diff"] / f"{v}.json", crate, str(crate / "src" / f"{kernel}.rs.map.json"),
                                   source.kernel_py(op_dir), dirs["diagnosis"] / f"{v}.json", op, kernel, v)
    if wv["verdict"] != "PASS":
        fc = wv.get("fail_class") or ("env" if wv["verdict"] == "ERROR" else "kernel")
        return write(Verdict(**base, verdict=wv["verdict"], owner=wv["owner"] or "kernel", fail_class=fc,
                             summary=f"write_kernel {wv['verdict']}: {wv['summary']}"[:1500],
                             findings=[Finding(**f) for f in wv.get("findings", [])][:20]), out_json)
    for v in [v for v in variants if v not in wblocked]:
        try:
            rv = read(Path(ref_dir) / f"{v}.json")
        except VerdictError as exc:
            rv = {"verdict": "ERROR", "summary": str(exc)}
        if rv["verdict"] != "PASS":
            msg = f"reference Tile IR of {kernel} {v} is {rv['verdict']}: {rv['summary']}"[:1500]
            return write(Verdict(**base, verdict="BLOCKED", owner="kernel", summary=msg,
                                 findings=[Finding("build", "critical", "kernel", msg)]), out_json)
    if b["verdict"] != "PASS":
        env = b["owner"] in ("env", "tool") and not (b.get("details") or {}).get("writer_fault")
        return write(Verdict(**base, verdict="ERROR" if env else ("BLOCKED" if b["verdict"] == "BLOCKED" else "FAIL"),
                             owner=b["owner"] or "kernel", fail_class="env" if env else "kernel",
                             summary=f"rust_build {b['verdict']}: {b['summary']}"[:1500],
                             findings=[Finding(**f) for f in b.get("findings", [])][:20],
                             artifacts={"build": str(adir / "build.json")}), out_json)
    findings, advice = [], {}
    backend = (diagnoser or {}).get("backend", "deterministic")
    llm = None          # the LLM IR diagnoser's answer (one call per attempt: first failing variant)
    if backend in ("anthropic", "auto"):
        # a rerun of this attempt's check (e.g. tileport's code changed) asks again, the old
        # exchange is kept under previous/
        agents.retire_transcript(Path(diagnoser["results"]) / op / "transcripts" / "ir_diagnose" / kernel
                           / f"attempt-{int(n)}.json")
    for v in variants:
        if v in wblocked:
            per[v] = "BLOCKED"
            continue
        d = dumps[v]
        if d["verdict"] != "PASS":
            per[v] = d["verdict"]
            if d["owner"] in ("env", "tool") and not (d.get("details") or {}).get("writer_fault"):
                return write(Verdict(**base, verdict="ERROR", owner=d["owner"], fail_class="env",
                                     summary=f"rust_ir {v} {d['verdict']}: {d['summary']}"[:1500],
                                     findings=[Finding(**f) for f in d.get("findings", [])][:20]),
                             out_json)
            findings += [Finding(**f) for f in d.get("findings", [])][:5]
            advice[v] = d["summary"]
            continue
        per[v] = diffs[v]["verdict"]
        if per[v] in ("PASS", "PASS_WITH_NOTES"):
            continue
        dg = diags[v]
        advice[v] = dg["summary"]
        findings += [Finding(**f) for f in dg.get("findings", [])][:5]
        if backend != "deterministic" and llm is None and (
                backend != "auto" or dg["verdict"] != "FAIL" or not dg.get("findings")):
            llm = llm_diagnosis(op_dir, op, kernel, int(n), v, diffs[v], dg, crate / "src" / f"{kernel}.rs",
                                diagnoser)
            if llm.get("advice"):
                advice[v] = f"LLM IR diagnoser: {llm['advice']} | deterministic: {dg['summary']}"
    bad = [v for v, w in per.items() if w not in ("PASS", "PASS_WITH_NOTES", "BLOCKED")]
    details = {"variants": per, "diagnoses": advice}
    if wblocked:
        details["blocked_variants"] = {v: {"owner": wb["owner"], "summary": wb["summary"]}
                                       for v, wb in wblocked.items() if v in variants}
    if llm is not None:
        details["llm_diagnoser"] = llm
    if not bad:
        nb = len(details.get("blocked_variants", {}))
        summary = (f"attempt {n}: all {len(per)} variant(s) match the reference Tile IR" if not nb else
                   f"attempt {n}: {len(per) - nb} variant(s) match the reference Tile IR; {nb} BLOCKED "
                   f"({', '.join(details['blocked_variants'])}; first: "
                   f"{next(iter(details['blocked_variants'].values()))['summary']})")
        return write(Verdict(**base, verdict="PASS", owner=None, details=details, summary=summary[:2000],
                             findings=[Finding("unsupported" if wb["owner"] == "tool" else "build", "warn", wb["owner"],
                                               f"variant {v} BLOCKED: {wb['summary']}"[:3000])
                                       for v, wb in details.get("blocked_variants", {}).items()]),
                     out_json)
    return write(Verdict(**base, verdict="FAIL", owner="kernel", fail_class="kernel", details=details,
                         findings=findings[:20],
                         summary=(f"attempt {n}: {len(bad)} of {len(per)} variant(s) differ from the "
                                  f"reference Tile IR; first ({bad[0]}): {advice.get(bad[0], per[bad[0]])}")[:2000]),
                 out_json)


def llm_diagnosis(op_dir, op: str, kernel: str, n: int, variant: str, diff: dict, det: dict,
                  port_rs: Path, diagnoser: dict) -> dict:
    """The IR diagnoser role played by an LLM for one failing variant of attempt ``n``.

    ``prompts/ir_diagnoser.md`` gets kernel.py, the port, the diff's critical findings and the
    deterministic diagnosis (``det``); the reply must hold one fenced ``markdown`` block (the
    advice), a ``json`` block and a ``VERDICT:`` line (:func:`tileport.core.agents.parse_reply`).
    Transcript: ``results/<op>/transcripts/ir_diagnose/<kernel>/attempt-<n>.json`` (replay reads
    those). Returns ``{"backend", "advice", "agent_claim", "transcript"}`` or, on any failure
    (no key, network, replay miss, unusable reply), ``{"backend", "error", "fail_class"}``:
    never raises, the loop goes on with the deterministic advice.
    """

    crits = [f for f in diff.get("findings", []) if f.get("severity") == "critical"][:12]
    lines = []
    for f in crits:
        loc = " ".join(f"{side} {f[side]['file'].split('/')[-1]}:{f[side]['line']} `{f[side].get('text', '').strip()}`"
                       for side in ("ref", "port") if f.get(side))
        lines.append(f"- {f['message']}" + (f" ({loc})" if loc else ""))
    try:
        fields = {"op": op, "kernel": kernel, "attempt": n, "variant": variant,
                  "reference_source": source.kernel_py(op_dir).read_text(),
                  "port_source": Path(port_rs).read_text(),
                  "findings": "\n".join(lines) or diff.get("summary", "(none)"),
                  "deterministic": det.get("summary", "(none)")}
    except OSError as exc:
        return {"backend": diagnoser["backend"], "error": str(exc), "fail_class": "env"}
    got = agents.consult("ir_diagnoser", fields, diagnoser, op=op, stage=f"ir_diagnose/{kernel}", attempt=n,
                         lang="markdown", repo_root=Path(op_dir).resolve().parent.parent)
    if "output" in got:
        got["advice"] = " ".join(x.strip() for x in got.pop("output").strip().splitlines() if x.strip())[:1500]
    return got
