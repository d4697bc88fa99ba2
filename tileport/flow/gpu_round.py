"""Checkpoint ``gpu_route``: where a GPU round of an operator goes (:func:`gpu_route` over
:func:`decide_gpu`): accept, retry (a kernel's next writer attempt, or the host builder's, tested
in round r + 1's own results tree; the routing records are :mod:`tileport.flow.route`'s) or stop.
"""
from __future__ import annotations

import json
from pathlib import Path

from tileport.core import agents
from tileport.core.verdict import TEST_PASSED, VerdictError, atomic_write_text, read
from tileport.flow.route import DETERMINISTIC, gpu_history, round_root
from tileport.gpu.kept import Kept


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
    # imported here: the check's modules (cutile dumps, IR diff) serve an LLM diagnoser alone, and
    # every operator's GPU route imports this module (issue 32)
    from tileport.flow.check import llm_diagnosis

    got = llm_diagnosis(op_dir, op, kernel, n, bad[0], diff, det,
                        root / op / "rust" / "src" / f"{kernel}.rs", diagnoser)
    out = {**d, "llm_diagnoser": got}
    if got.get("advice"):
        out["feedback"] = d["feedback"] + f"\n- LLM IR diagnoser, variant {bad[0]}: {got['advice']}"
    return out
