"""Verdict-driven routing of the kernel writer: a bounded loop over attempt-numbered file targets.

Every attempt ``n`` of the kernel writer for one kernel lives under
``results/<op>/attempts/<kernel>/<n>/`` and is never overwritten by another attempt:

- ``rust/src/<kernel>.rs`` (+ ``.map.json``) and ``write.json``: the writer's output and verdict
  (rule ``write_kernel``);
- ``check.json`` (+ ``rust/`` crate, ``ir/<variant>.*``): tileport's own verdict on it (rule
  ``check_kernel``, :func:`check`): the port crate built with cargo, every variant compiled to
  Tile IR by cutile and diffed against the reference Tile IR, each failing variant's IR diff
  diagnosed (the IR diagnoser role);
- ``route.json``: where to go next (checkpoint ``route``, :func:`decide`): ``accept``,
  ``retry`` (attempt n+1, whose prompt carries this attempt's failure and diagnosis) or
  ``stop`` (a cap reached, an environment failure, or a deterministic writer that would only
  repeat itself).

Rule ``accept_kernel`` follows the routes from attempt 1 (Snakemake's checkpoint mechanism:
``snakemake -n`` on a half-finished run lists the next attempt's jobs) and publishes the last
attempt as ``results/<op>/rust/src/<kernel>.rs`` and ``results/<op>/write_kernel/<kernel>.json``,
which every later stage reads. An attempt that was not accepted is published too when the loop
stopped, so the later stages report its failure and ``summary.csv`` carries the last diagnosis.
The LLM's own ``VERDICT:`` line never decides anything here.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from tileport.core import agents, source
from tileport.core.verdict import TEST_PASSED, Finding, Verdict, VerdictError, atomic_write_text, read, write
from tileport.cpu import ir_diagnose, rust_ir
from tileport.gpu.kept import Kept
from tileport.ir_diff import stage as ir_diff_stage

# writers that give the same output for the same input: retrying them cannot help
DETERMINISTIC = ("translator",)
ROUTES = ("accept", "retry", "stop")


def attempt_dir(results: str | Path, op: str, kernel: str, n: int) -> Path:
    """``results/<op>/attempts/<kernel>/<n>``: every file of one writer attempt."""
    return Path(results) / op / "attempts" / kernel / str(int(n))


def retire(results, op: str, kernel: str, n: int) -> list[str]:
    """Before writer attempt ``n`` is (re)written, move its own earlier transcripts -- the
    writer's and the IR diagnoser's ``attempt-<n>.json`` -- to ``transcripts/<stage>/<kernel>/
    previous/<UTC time>/``: kept, never overwritten, no longer counted. Later attempts are left
    alone: if attempt n's route comes out as before, Snakemake (which compares checksums) reuses
    them like a cache; if it differs, they are rerun, each retiring its own transcript then.
    Not called under replay (which reads the transcripts). Returns what was moved."""
    ts = [Path(results) / op / "transcripts" / stage / kernel / f"attempt-{int(n)}.json"
          for stage in ("write_kernel", "ir_diagnose")]
    return [str(t) for t in ts if agents.retire_transcript(t)]


#: the per-variant stage folders of an attempt (and, once published, of the operator's tree):
#: rust_ir/<variant>.{tileirbc,tileir,json}, ir_diff/<variant>.json, diagnosis/<variant>.json
VARIANT_STAGES = ("rust_ir", "ir_diff", "diagnosis")


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
    try:
        wv = read(write_json)
    except VerdictError as exc:
        return write(Verdict(**base, verdict="ERROR", owner="tool", fail_class="env", summary=str(exc)),
                     out_json)
    crate = adir / "rust"
    b = rust_ir.build(op, crate, {kernel: write_json}, adir / "build.json", adir / "build.log")
    per, dumps, diffs, diags = {}, {}, {}, {}
    dirs = {s: adir / s for s in VARIANT_STAGES}
    for s in VARIANT_STAGES:
        shutil.rmtree(dirs[s], ignore_errors=True)         # a rerun of this attempt's check
        dirs[s].mkdir(parents=True)
    # variants the writer left out (blocking is per variant): BLOCKED in each per-variant stage
    # with the writer's reason and owner; the others are dumped, diffed and diagnosed
    wblocked = ((wv.get("details") or {}).get("blocked_variants") or {}) if wv["verdict"] == "PASS" else {}
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
        r = dirs["rust_ir"]
        dumps[v] = rust_ir.dump(op_dir, op, kernel, v, adir / "build.json", r / f"{v}.tileirbc", r / f"{v}.tileir",
                                r / f"{v}.json", target=target)
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


def publish_variants(adir, out_dirs: dict, variants: list[str], check_json) -> None:
    """Publish the per-variant verdicts :func:`check` wrote for an attempt (``<adir>/<stage>/``)
    into the operator's folders ``out_dirs`` (``{stage: folder}`` for :data:`VARIANT_STAGES`):
    copies of the very files, so the accepted kernel's IR is compiled and diffed once. A variant
    the attempt has no verdict for (its check ended before it, or is unreadable) gets an ERROR
    verdict in each stage naming the check's (owner tool: tileport wrote no verdict)."""
    adir = Path(adir)
    try:
        cv = read(check_json)
        why = f"check_kernel {cv['verdict']}: {cv['summary']}"
    except VerdictError as exc:
        why = str(exc)
    for s, out in out_dirs.items():
        out = Path(out)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for v in variants:
            for ext in ((".json", ".tileir", ".tileirbc") if s == "rust_ir" else (".json",)):
                src = adir / s / f"{v}{ext}"
                if src.is_file():
                    shutil.copyfile(src, out / f"{v}{ext}")
            if not (out / f"{v}.json").is_file():
                stage = "ir_diagnose" if s == "diagnosis" else s
                msg = f"{adir}: no {s} verdict for {v} ({why})"[:1500]
                write(Verdict(stage=stage, op=adir.parents[2].name, kernel=adir.parent.name, variant=v,
                              verdict="ERROR", owner="tool", summary=msg,
                              findings=[Finding("environment", "critical", "tool", msg)]), out / f"{v}.json")


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


def decide(check_v: dict, backend: str, n: int, cap: int) -> dict:
    """Where attempt ``n`` goes next, from its ``check_kernel`` verdict alone.

    Returns ``{"attempt", "next": accept|retry|stop, "route", "reason", "feedback"}`` (+ ``"cap"``
    when the cap stopped it: only then does the route depend on the cap).
    Routes (issue "LLM agents for every role", section 4):

    - PASS → ``accept``;
    - FAIL ``agent_output`` (no parsable output or VERDICT line) → ``retry``: the same role
      again with the failure in its prompt;
    - FAIL ``kernel`` (rustc error, IR diff FAIL) → ``retry`` via the IR diagnoser: the next
      prompt carries the diff and the diagnoser's advice;
    - ERROR ``env`` → ``stop``: no new kernel can fix a missing key, cargo or network;
    - BLOCKED → ``stop`` (the writer or the reference cannot go on);
    - anything else → ``stop`` when ``n`` reached ``cap`` or the backend is deterministic
      (``translator``: same input, same output).
    ``feedback`` is the text the next attempt's prompt quotes. Raises ValueError for n < 1 or
    cap < 1.
    """
    if n < 1 or cap < 1:
        raise ValueError(f"attempt {n} / cap {cap}: both must be >= 1")
    word, fc = check_v["verdict"], check_v.get("fail_class")
    lines = [f"- {f['message']}" for f in check_v.get("findings", [])[:12]]
    for v, adv in sorted((check_v.get("details") or {}).get("diagnoses", {}).items()):
        lines.append(f"- IR diagnoser, variant {v}: {adv}")
    feedback = (f"Attempt {n}: {word} (fail_class {fc or '-'}): {check_v['summary']}\n"
                + "\n".join(dict.fromkeys(lines)))
    # a route that does not depend on the cap does not mention it: raising the cap then rewrites
    # an identical route.json, and Snakemake (which compares checksums) redoes no later attempt
    out = {"attempt": n, "verdict": word, "fail_class": fc, "feedback": feedback}
    if word in ("PASS", "PASS_WITH_NOTES"):
        return {**out, "next": "accept", "route": "accept", "reason": check_v["summary"]}
    if word == "ERROR" or fc == "env":
        return {**out, "next": "stop", "route": "env -> stop",
                "reason": f"environment failure, no new kernel can fix it: {check_v['summary']}"}
    if word == "BLOCKED":
        return {**out, "next": "stop", "route": "blocked -> stop", "reason": check_v["summary"]}
    route = ("agent_output -> kernel_writer" if fc == "agent_output"
             else "kernel -> ir_diagnose -> kernel_writer")
    if backend in DETERMINISTIC:
        return {**out, "next": "stop", "route": route,
                "reason": f"the {backend} is deterministic: another attempt would repeat attempt {n}"}
    if n >= cap:
        return {**out, "cap": cap, "next": "stop", "route": route,
                "reason": f"cap reached: {n} of {cap} kernel-writer attempts; last: {check_v['summary']}"}
    return {**out, "next": "retry", "route": route, "reason": f"attempt {n + 1} follows"}


def route(check_json, out_json, backend: str, n: int, cap: int) -> dict:
    """Stage ``route`` (a Snakemake checkpoint): :func:`decide` on ``check_json``, written to
    ``out_json``; an unreadable check verdict is a ``stop`` naming it."""
    try:
        cv = read(check_json)
    except VerdictError as exc:
        cv = {"verdict": "ERROR", "fail_class": "env", "summary": str(exc), "findings": []}
    d = decide(cv, backend, int(n), int(cap))
    atomic_write_text(out_json, json.dumps(d, indent=1) + "\n")
    return d


def history(results, op: str, kernel: str, upto: int | None = None) -> list[dict]:
    """The routes taken for one kernel, attempt 1 first: up to attempt ``upto`` (every attempt,
    including one a GPU round asked for after an accepted attempt), or, without ``upto``, up to
    the first route that is not a retry. Stops at the first gap."""
    out, n = [], 1
    while upto is None or n <= upto:
        p = attempt_dir(results, op, kernel, n) / "route.json"
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            return out
        if upto is None and out[-1].get("next") != "retry":
            return out
        n += 1
    return out


def accept(results, op: str, kernel: str, last_route, out_rs, out_map, out_json,
           out_dirs: dict | None = None, variants: list[str] = ()) -> dict:
    """Stage ``accept_kernel``: publish the last attempt the routes led to.

    Copies ``attempts/<kernel>/<n>/rust/src/<kernel>.rs`` (+ ``.map.json``) to ``out_rs`` /
    ``out_map`` and writes the ``write_kernel`` verdict (``out_json``): the writer's verdict of
    attempt ``n`` with ``attempt = n``, ``details.routes`` (every attempt's route) and, when the
    loop stopped without an accepted attempt, ``details.stopped`` plus a finding with the
    reason. That file is what rust_build and summary.csv read. ``out_dirs`` (``{stage: folder}``
    of :data:`VARIANT_STAGES`) receive the attempt's per-variant verdicts of ``variants``
    (:func:`publish_variants`).
    """
    try:
        r = json.loads(Path(last_route).read_text())
        n = int(r["attempt"])
        r["next"], r["reason"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        n = int(Path(last_route).parent.name) if Path(last_route).parent.name.isdigit() else 0
        msg = (f"{last_route}: unreadable route ({type(exc).__name__}: {exc}); delete it and rerun: "
               f"checkpoint route writes it again from check.json")
        atomic_write_text(out_rs, f"// ERROR: {msg}\n")
        atomic_write_text(out_map, '{"lines": []}\n')
        if out_dirs:
            publish_variants(Path(last_route).parent, out_dirs, list(variants), Path(last_route).parent / "check.json")
        return write(Verdict(stage="write_kernel", op=op, kernel=kernel, verdict="ERROR", owner="tool",
                             attempt=max(n, 1), summary=msg[:1500],
                             findings=[Finding("input", "critical", "tool", msg[:1500])]), out_json)
    adir = attempt_dir(results, op, kernel, n)
    if out_dirs:
        publish_variants(adir, out_dirs, list(variants), adir / "check.json")
    src = adir / "rust" / "src" / f"{kernel}.rs"
    Path(out_rs).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, out_rs)
    mp = Path(str(src) + ".map.json")
    if mp.exists():
        shutil.copyfile(mp, out_map)
    else:
        atomic_write_text(out_map, '{"lines": []}\n')
    wv = read(adir / "write.json")
    routes = history(results, op, kernel, upto=n)
    details = {**wv.get("details", {}), "routes": [{k: x[k] for k in ("attempt", "next", "route", "reason")}
                                                   for x in routes]}
    findings = [Finding(**f) for f in wv.get("findings", [])]
    if r["next"] == "stop":
        details["stopped"] = r["reason"]
        if wv["verdict"] == "PASS":
            findings.append(Finding("build", "critical", "kernel", f"routing stopped: {r['reason']}"[:1500]))
    wv.pop("schema", None)
    out = Verdict(**{**{k: wv[k] for k in ("stage", "op", "verdict", "summary", "kernel", "variant", "owner")},
                     "attempt": n, "findings": findings, "artifacts": {**wv.get("artifacts", {}),
                                                                        "attempt_dir": str(adir)},
                     "details": details, "fail_class": wv.get("fail_class")})
    return write(out, out_json)


# ---------------------------------------------------------------------------------------------
# GPU rounds: the routes after the GPU stages (checkpoint ``gpu_route``)
#
# Round 1 of an operator is what results/<op>/ holds (the kernels accept_kernel published, the
# shared host library, test.json, bench.json, perf_diagnosis.json). When its GPU verdicts send
# the port back to the kernel writer, round r + 1 is a results tree of its own,
# ``results/<op>/rounds/<r + 1>/`` (its own port crate, Tile IR, IR diff, shim, one-operator host
# library, GPU test, benchmark), built by the same rules; ``results/<op>/rounds/<r>/route.json``
# says where round r went. summary.csv reports the last round.

def round_dir(results, op: str, r: int) -> Path:
    """``results/<op>/rounds/<r>``: round r's route.json (and, for r >= 2, its results tree)."""
    return Path(results) / op / "rounds" / str(int(r))


def round_root(results, op: str, r: int) -> Path:
    """The results tree of round r: ``results`` itself for round 1, else :func:`round_dir`."""
    return Path(results) if int(r) == 1 else round_dir(results, op, r)


def gpu_history(results, op: str) -> list[dict]:
    """The GPU routes of ``op`` from round 1 up to the first that is not a retry (or a gap)."""
    out, r = [], 1
    while True:
        try:
            d = json.loads((round_dir(results, op, r) / "route.json").read_text())
        except (OSError, ValueError):
            return out
        if not isinstance(d, dict):
            return out
        out.append({**d, "round": r})       # the file's place, not what it claims, is its round
        req = d.get("request")
        if d.get("next") != "retry" or not isinstance(req, dict) or type(req.get("attempt")) is not int:
            return out
        r += 1


def _dict(x) -> dict:
    return x if isinstance(x, dict) else {}


def _list(x) -> list:
    return x if isinstance(x, list) else []


def _failed_variants(test_v: dict) -> list[str]:
    """``kernel/variant`` keys a gpu_test verdict marks FAIL (malformed details: none)."""
    return sorted(k for k, w in _dict(_dict(test_v.get("details")).get("variants")).items()
                  if isinstance(k, str) and w == "FAIL")


def _failing_kernel(test_v: dict, attempts: dict[str, int]) -> str:
    """The first kernel (in name order) with a failing variant in a gpu_test verdict."""
    bad = sorted({key.split("/")[0] for key in _failed_variants(test_v)} & set(attempts))
    return bad[0] if bad else sorted(attempts)[0]


def _worst_configs(perf_v: dict, bench_v: dict) -> list[dict]:
    return [w for src in (_dict(_dict(perf_v.get("details")).get("evidence")), _dict(bench_v.get("details")))
            for w in _list(src.get("worst_configs")) if isinstance(w, dict)]


def _slowest_kernel(perf_v: dict, bench_v: dict, attempts: dict[str, int]) -> str:
    """The kernel of the slowest benchmark config (lowest ref/port ratio)."""
    for w in _worst_configs(perf_v, bench_v):
        if w.get("kernel") in attempts:
            return w["kernel"]
    return sorted(attempts)[0]


def decide_gpu(test_v: dict, bench_v: dict, perf_v: dict, attempts: dict[str, int], r: int, *,
               writer: str, writer_cap: int, host_builder: str = "deterministic",
               host_attempt: int = 1, host_cap: int = 1, writers: dict[str, str] | None = None,
               ir_notes: dict[str, dict[str, list[str]] | list[str]] | None = None) -> dict:
    """Where GPU round ``r`` of an operator goes, from its verdicts alone.

    ``test_v`` / ``bench_v`` / ``perf_v``: the round's gpu_test, bench and perf_diagnose
    verdicts; ``attempts``: {kernel: writer attempt tested in this round}; ``writers``:
    {kernel: backend that wrote that attempt} (``translator`` under ``auto`` = deterministic); ``ir_notes``:
    {kernel: {variant: IR-diff notes and IR diagnoses}} (:func:`ir_notes`; the IR diagnoser's
    view of a kernel whose Tile IR matched the reference but whose output did not): the
    failing variants' notes (the slowest config's for a slow port) go into the feedback.
    Returns ``{"round", "next": accept|retry|stop, "route", "reason", "feedback", "attempts"}``
    plus ``"request": {"role", "kernel", "attempt"}`` on retry. Routes (issue "LLM agents for
    every role", section 4):

    - gpu_test NOT_RUN (no GPU) → ``stop``: nothing measured to route on;
    - gpu_test FAIL/ERROR/BLOCKED ``fail_class kernel`` (numerics) → IR diagnoser → kernel writer,
      the failing kernel's next attempt; ``host`` (launch, shim, library) → host builder;
      ``env`` → ``stop``;
    - gpu_test ALL_PASS (or FAITHFUL_REF_DEFECT: the port agrees with a reference whose defect the
      manifest declares; no writer can act on the kernel's own bug) and bench DONE (or not run)
      → ``accept``;
    - bench BELOW_THRESHOLD → perf diagnoser → its ``owner``: kernel writer (the slowest
      config's kernel) or host builder; bench FAIL/ERROR → as a gpu_test failure;
    - a deterministic role (the translator, the deterministic host builder) is never asked
      again (same input, same output), nor is a kernel at ``writer_cap`` writer attempts or a
      host builder at ``host_cap`` (``host_attempt``: shims so far, the first one included):
      ``stop`` with the reason and the last diagnosis.
    A retry's ``request`` is ``{"role": "kernel_writer", "kernel", "attempt"}`` or
    ``{"role": "host_builder", "attempt"}``.
    Raises ValueError for r < 1, writer_cap < 1 or no kernel.
    """
    if r < 1 or writer_cap < 1 or not attempts:
        raise ValueError(f"round {r} / cap {writer_cap} / kernels {attempts}: invalid")
    out = {"round": r, "attempts": dict(attempts)}
    tw, bw = test_v.get("verdict"), bench_v.get("verdict")

    def stop(route: str, reason: str, feedback: str = "") -> dict:
        return {**out, "next": "stop", "route": route, "reason": reason[:1500], "feedback": feedback}

    def again(route: str, feedback: str, last: str, *, deterministic: str | None, repeat: str, n: int,
              cap: int, capped: str, follows: str, request: dict) -> dict:
        """The owning role once more (``request``), unless it is deterministic or at its cap."""
        if deterministic:
            return stop(route, f"the {deterministic} is deterministic: another {repeat}; last: {last}", feedback)
        if n >= cap:
            return {**stop(route, f"cap reached: {n} of {cap} {capped}; last: {last}", feedback), "cap": cap}
        return {**out, "next": "retry", "route": route, "feedback": feedback,
                "reason": f"{follows} (round {r + 1})", "request": request}

    def to_owner(owner: str, stage_v: dict, how: str, kernel: str) -> dict:
        crit = [f"- {f['message']}" for f in stage_v.get("findings", []) if f.get("severity") == "critical"][:12]
        feedback = (f"GPU round {r}: {stage_v['stage']} {stage_v['verdict']} (fail_class {owner}): "
                    f"{stage_v['summary']}\n" + "\n".join(dict.fromkeys(crit)))
        if owner == "env" or owner not in ("kernel", "host"):
            return stop(f"{how}{owner or 'unknown'} -> stop",
                        f"{stage_v['stage']} {stage_v['verdict']} ({owner or 'no owner'}): {stage_v['summary']}",
                        feedback)
        if owner == "host":
            return again(f"{how}host -> host_builder", feedback, stage_v["summary"],
                         deterministic="host builder" if host_builder == "deterministic" else None,
                         repeat="shim would repeat this one", n=host_attempt, cap=host_cap,
                         capped="host-builder attempts", follows=f"host-builder attempt {host_attempt + 1} follows",
                         request={"role": "host_builder", "attempt": host_attempt + 1})
        failing = [key.split("/", 1)[1] for key in _failed_variants(test_v) if key.startswith(f"{kernel}/")]
        failing += [w.get("variant") for w in _worst_configs(stage_v, {})[:1]
                    if w.get("kernel") == kernel and isinstance(w.get("variant"), str)]
        notes = _notes_for((ir_notes or {}).get(kernel) or [], failing)
        route = (f"{how}kernel -> ir_diagnose -> kernel_writer" if stage_v["stage"] == "gpu_test"
                 else f"{how}kernel -> kernel_writer")
        if notes:
            feedback += "\n" + "\n".join(f"- IR diagnoser: {x}" for x in dict.fromkeys(notes))
        n = attempts[kernel]
        # auto: a kernel the translator ported is ported by it again (the LLM only takes over
        # where the translator is BLOCKED)
        who = next((x for x in ((writers or {}).get(kernel), writer) if x in DETERMINISTIC), None)
        return again(route, feedback, stage_v["summary"], deterministic=who,
                     repeat=f"attempt would repeat attempt {n} of {kernel}", n=n, cap=writer_cap,
                     capped=f"kernel-writer attempts of {kernel}", follows=f"attempt {n + 1} of {kernel} follows",
                     request={"role": "kernel_writer", "kernel": kernel, "attempt": n + 1})

    if tw == "NOT_RUN" or tw is None:
        return stop("not_run -> stop", f"gpu_test {tw or 'missing'}: {test_v.get('summary', '')}")
    if tw not in TEST_PASSED + ("FAIL", "ERROR", "BLOCKED"):
        return stop("unknown -> stop",
                    f"gpu_test verdict {tw!r} is not one gpu_test writes: {test_v.get('summary', '')}")
    if bw not in (None, "DONE", "NOT_RUN", "BELOW_THRESHOLD", "FAIL", "ERROR", "BLOCKED"):
        return stop("unknown -> stop", f"bench verdict {bw!r} is not one bench writes: {bench_v.get('summary', '')}")
    if tw not in TEST_PASSED:       # FAITHFUL_REF_DEFECT: the port is faithful, as ALL_PASS
        fc = test_v.get("fail_class") or test_v.get("owner") or "kernel"
        return to_owner(fc, test_v, "", _failing_kernel(test_v, attempts))
    if bw in ("DONE", "NOT_RUN"):
        return {**out, "next": "accept", "route": "accept",
                "reason": f"gpu_test {tw}; bench {bw}: {bench_v.get('summary', '')}"[:1500], "feedback": ""}
    if bw == "BELOW_THRESHOLD":
        if perf_v.get("verdict") != "FAIL":
            return stop("below_threshold -> stop",
                        f"bench below threshold, perf diagnosis {perf_v.get('verdict')}: "
                        f"{perf_v.get('summary', '')}")
        return to_owner(perf_v.get("owner") or "kernel", perf_v, "below_threshold -> perf_diagnose -> ",
                        _slowest_kernel(perf_v, bench_v, attempts))
    fc = bench_v.get("fail_class") or bench_v.get("owner") or "kernel"
    return to_owner(fc, {**bench_v, "stage": bench_v.get("stage", "bench")}, "",
                    _failing_kernel(test_v, attempts))


def ir_notes(root, op: str, kernels: list[str]) -> dict[str, dict[str, list[str]]]:
    """{kernel: {variant: notes}} from the round's IR diffs (their warn/info findings: what the
    structural diff let pass) and IR diagnoses under ``root/<op>/``: the deterministic IR
    diagnoser's view of a kernel whose output was wrong although its Tile IR matched."""
    out: dict[str, dict[str, list[str]]] = {}
    for k in kernels:
        per: dict[str, list[str]] = {}
        for sub in ("ir_diff", "diagnosis"):
            for f in sorted((Path(root) / op / sub / k).glob("*.json")):
                try:
                    d = read(f)
                except VerdictError:
                    continue
                if sub == "ir_diff":
                    notes = [x["message"] for x in d.get("findings", []) if x.get("severity") in ("warn", "info")]
                else:
                    notes = [d["summary"]] if d["verdict"] == "FAIL" else []
                per.setdefault(f.stem, []).extend(notes[:4])
        out[k] = per
    return out


def _notes_for(notes: dict[str, list[str]] | list[str], variants: list[str]) -> list[str]:
    """The IR notes of the variants that failed (all variants' when none is named), each note once."""
    if isinstance(notes, list):
        return notes[:12]
    pick = [v for v in variants if v in notes] or sorted(notes)
    out: dict[str, list[str]] = {}
    for v in pick:
        for msg in notes[v]:
            out.setdefault(msg, []).append(v)
    return [f"{msg} (variant{'s' if len(vs) > 1 else ''} {', '.join(vs)})" for msg, vs in out.items()][:12]


def gpu_route(results, op: str, r: int, kernels: list[str], out_json, *, writer: str, writer_cap: int,
              host_builder: str = "deterministic", host_cap: int = 1, diagnoser: dict | None = None,
              op_dir=None) -> dict:
    """Stage ``gpu_route`` (a Snakemake checkpoint): :func:`decide_gpu` on GPU round ``r``'s
    verdicts under :func:`round_root`, written to ``out_json``. The writer attempt each kernel
    had in that round is read from the round's ``write_kernel/<kernel>.json``; unreadable
    verdicts count as missing (``stop`` naming them), never raise. ``diagnoser``: the IR
    diagnoser role (:func:`tileport.core.agents.role_config`); when it is an LLM and a numerics
    failure goes back to the writer, it is asked about the first failing variant
    (:func:`llm_diagnosis`, transcript ``ir_diagnose/<kernel>/attempt-<n>.json`` of the tested
    attempt n) and its advice joins the feedback (``llm_diagnoser``: its answer)."""
    root = round_root(results, op, r)
    if op_dir:
        # verdicts copied back from a GPU node: keep them, so a GPU-less rerun of gpu_test/bench
        # (a config change upstream) restores them instead of writing NOT_RUN
        Kept(root, op, op_dir).snapshot()
    docs, missing = {}, []
    for name, rel in (("test", "test.json"), ("bench", "bench.json"), ("perf", "perf_diagnosis.json")):
        try:
            docs[name] = read(root / op / rel)
        except VerdictError as exc:
            docs[name] = {"stage": name, "verdict": None, "summary": str(exc)}
            missing.append(str(exc))
    attempts, writers = {}, {}
    for k in kernels:
        try:
            wk = read(root / op / "write_kernel" / f"{k}.json")
            attempts[k] = int(wk.get("attempt") or 1)
            writers[k] = str(_dict(wk.get("details")).get("backend") or "")
        except VerdictError as exc:
            attempts[k] = 1
            missing.append(str(exc))
    if missing and docs["test"]["verdict"] is not None and docs["test"]["verdict"] != "NOT_RUN":
        d = {"round": r, "attempts": attempts, "next": "stop", "route": "unreadable -> stop",
             "reason": f"unreadable verdict(s): {'; '.join(missing)}"[:1500], "feedback": ""}
    else:
        # the host builder's attempts so far: round 1's shim plus one per earlier request
        host_attempt = 1 + sum(1 for x in gpu_history(results, op)[:r - 1]
                               if (x.get("request") or {}).get("role") == "host_builder")
        d = decide_gpu(docs["test"], docs["bench"], docs["perf"], attempts, r, writer=writer,
                       writer_cap=writer_cap, host_builder=host_builder, host_attempt=host_attempt,
                       host_cap=host_cap, writers=writers, ir_notes=ir_notes(root, op, kernels))
        req = d.get("request") or {}
        if (diagnoser or {}).get("backend", "deterministic") != "deterministic" and op_dir \
                and d["route"] == "kernel -> ir_diagnose -> kernel_writer" and req.get("kernel"):
            d = _gpu_llm_diagnosis(d, root, op, req["kernel"], docs["test"], diagnoser, op_dir)
    atomic_write_text(out_json, json.dumps(d, indent=1) + "\n")
    return d


def _gpu_llm_diagnosis(d: dict, root: Path, op: str, kernel: str, test_v: dict, diagnoser: dict,
                       op_dir) -> dict:
    """The LLM IR diagnoser on a GPU numerics failure (see :func:`gpu_route`); never raises."""
    n = d["attempts"][kernel]
    bad = sorted(key.split("/", 1)[1] for key, w in ((test_v.get("details") or {}).get("variants") or {}).items()
                 if w == "FAIL" and key.startswith(f"{kernel}/"))
    if not bad:
        return d
    try:
        diff = read(root / op / "ir_diff" / kernel / f"{bad[0]}.json")
    except VerdictError as exc:
        return {**d, "llm_diagnoser": {"backend": diagnoser["backend"], "error": str(exc), "fail_class": "env"}}
    crit = [f["message"] for f in test_v.get("findings", []) if f.get("severity") == "critical"][:6]
    det = {"summary": (f"the Tile IR matched the reference ({diff['verdict']}: {diff['summary']}) but the GPU "
                       f"test failed: {test_v['summary']}; " + "; ".join(crit))[:3000]}
    transcripts = Path(diagnoser["results"]) / op / "transcripts" / "ir_diagnose" / kernel
    agents.retire_transcript(transcripts / f"attempt-{n}.json")
    got = llm_diagnosis(op_dir, op, kernel, n, bad[0], diff, det,
                        root / op / "rust" / "src" / f"{kernel}.rs", diagnoser)
    out = {**d, "llm_diagnoser": got}
    if got.get("advice"):
        out["feedback"] = d["feedback"] + f"\n- LLM IR diagnoser, variant {bad[0]}: {got['advice']}"
    return out


def final(results, op: str, out_json) -> dict:
    """Stage ``final_round``: ``{"op", "round", "root", "next", "route", "reason", "rounds"}`` of
    the operator's last GPU round (:func:`gpu_history`) written to ``out_json``; summary.csv
    reports that round's tree."""
    hist = gpu_history(results, op)
    last = hist[-1] if hist else {"round": 1, "next": "stop", "route": "missing", "reason": "no GPU route"}
    r = max(len(hist), 1)                  # gpu_history: rounds 1..n, consecutive
    d = {"op": op, "round": r, "root": str(round_root(results, op, r)),
         **{k: last.get(k) for k in ("next", "route", "reason")},
         "rounds": [{k: x.get(k) for k in ("round", "attempts", "next", "route", "reason", "request")}
                    for x in hist]}
    atomic_write_text(out_json, json.dumps(d, indent=1) + "\n")
    return d
