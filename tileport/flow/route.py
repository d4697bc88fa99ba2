"""Verdict-driven routing of the kernel writer: a bounded loop over attempt-numbered file targets.

Every attempt ``n`` of the kernel writer for one kernel lives under
``results/<op>/attempts/<kernel>/<n>/`` and is never overwritten by another attempt:

- ``rust/src/<kernel>.rs`` (+ ``.map.json``) and ``write.json``: the writer's output and verdict
  (rule ``write_kernel``);
- ``check.json`` (+ ``rust/`` crate, ``{rust_ir,ir_diff,diagnosis}/<variant>.*``): tileport's own
  verdict on it (rule ``check_kernel``, :func:`tileport.flow.check.check`): the port crate
  checked by rustc, every variant compiled to Tile IR by cutile, diffed against the reference
  Tile IR and its diff diagnosed (the IR diagnoser role);
- ``route.json``: where to go next (written by the same checkpoint ``check_kernel`` after
  ``check.json``, :func:`route` / :func:`decide`): ``accept``,
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

from tileport.core.verdict import Finding, Verdict, VerdictError, atomic_write_text, read, write

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
    # imported here: only write_kernel retires transcripts, and the routing jobs that import
    # this module (accept_kernel, final_round: one each per kernel or operator) would pay
    # for the LLM client's imports on every start
    from tileport.core import agents

    ts = [Path(results) / op / "transcripts" / stage / kernel / f"attempt-{int(n)}.json"
          for stage in ("write_kernel", "ir_diagnose")]
    return [str(t) for t in ts if agents.retire_transcript(t)]


#: the per-variant stage folders of an attempt (and, once published, of the operator's tree):
#: rust_ir/<variant>.{tileirbc,tileir,json}, ir_diff/<variant>.json, diagnosis/<variant>.json
VARIANT_STAGES = ("rust_ir", "ir_diff", "diagnosis")


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


def cap_decides(backend: str, n: int, cap: int) -> bool:
    """Whether the cap can decide attempt ``n``'s route (:func:`decide` stops a failing attempt
    there "cap reached"): only for a writer that may be retried (not in :data:`DETERMINISTIC`) and
    at the last attempt the cap allows. The workflow reruns an attempt's check (which writes the
    route) when this changes, and for no other cap change."""
    return backend not in DETERMINISTIC and n >= cap


def may_retry(writer: str, writer_cap: int, host_builder: str, host_cap: int) -> dict[str, bool]:
    """Whether any route can say ``retry`` under these roles and caps: ``{"cpu": ..., "gpu": ...}``
    for the routes of ``check_kernel`` (:func:`decide`) and of ``gpu_route``
    (:func:`tileport.flow.gpu_round.decide_gpu`). A writer in :data:`DETERMINISTIC` or a cap of 1
    attempt never gets another attempt; a GPU route may also ask the host builder again, unless
    it is ``deterministic`` or its cap is 1. The workflow makes a route's rule a checkpoint only
    where it may retry: a checkpoint makes Snakemake rebuild its DAG after every such job (issue 32)."""
    writer_may = writer not in DETERMINISTIC and int(writer_cap) > 1
    host_may = host_builder != "deterministic" and int(host_cap) > 1
    return {"cpu": writer_may, "gpu": writer_may or host_may}


def may_retry_under(config: dict) -> dict[str, bool]:
    """:func:`may_retry` of a run's config (config.yaml's ``roles`` and ``attempts``). Raises
    KeyError when a role or an attempt cap is missing (the workflow validates config.yaml)."""
    return may_retry(config["roles"]["kernel_writer"], config["attempts"]["write_kernel"],
                     config["roles"]["host_builder"], config["attempts"]["host_shim"])


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
    if cap_decides(backend, n, cap):
        return {**out, "cap": cap, "next": "stop", "route": route,
                "reason": f"cap reached: {n} of {cap} kernel-writer attempts; last: {check_v['summary']}"}
    return {**out, "next": "retry", "route": route, "reason": f"attempt {n + 1} follows"}


def route(check_json, out_json, backend: str, n: int, cap: int) -> dict:
    """The route of one attempt, written by checkpoint ``check_kernel`` after its verdict:
    :func:`decide` on ``check_json``, written to ``out_json`` (JSON); an unreadable check verdict
    is a ``stop`` naming it. Returns the route (:func:`decide`'s dict)."""
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
               f"checkpoint check_kernel writes it again with check.json")
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
