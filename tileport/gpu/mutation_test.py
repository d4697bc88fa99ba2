"""Stage ``mutation_gpu``: the numeric-test column of the mutation study (issue 36), on a GPU.

Every compiling mutant of ``results/mutation/<op>/<kernel>.json`` that the mutant host library
(``results/mutation/<op>/<kernel>.host/``, :mod:`tileport.host.mutants`) holds is launched as the
operator's port and judged by the GPU test's own comparison (:func:`tileport.gpu.test.check_call`:
the cuTile Python reference and the port on the same inputs and launch grid, each output against
reference.py under the manifest's per-dtype tolerance and the error scales it declares, and the
port against the reference kernel's outputs), first on the manifest's test shapes, then on unseen shapes
(:func:`unseen_shapes`: other extents, sizes not divisible by 16, derived from the manifest's
shapes and kept only where ``fits`` holds). ``m000``, the unmutated port, runs each case first:
a case it fails (a false positive of the numeric test) judges no mutant.

A call *flags* the port (:func:`judge`) when the port's outputs are not within tolerance of the
cuTile Python reference's (NaN where it has NaN), or miss reference.py where the reference
meets it, or the port crashes: a launch error, a CUDA error, a hang cut by ``gpu_timeout_s``
or the worker process dying -- a crash counts as caught, named as such. Per mutant
(``details.records``): ``test`` (caught on a test shape), ``unseen`` (caught only on an unseen
shape), ``crashed`` (caught by a crash; ``on`` says where), ``missed`` (every case ran, none
flagged), ``rejected`` (the mutant library's build rejected it: counted, never caught),
``not_run`` (the wall budget ``gpu_budget_s`` ran out, or no case fits). ``details.mutants``
folds them to CAUGHT / MISSED / NOT_RUN for the report; a mutant left unrun is NOT_RUN, never a
pass.

The calls run in a worker process (``python -m tileport.gpu.mutation_test --worker``): a hang is
killed with its process and a lost CUDA context (an illegal address) restarts the worker, so one
mutant never costs the others their measurement. Without a GPU the verdict is NOT_RUN (config
``gpu``, as ``gpu_test``).

On a GPU node, from a results tree the CPU built (``mutation`` and ``mutation_host`` done)::

    python -m tileport.gpu.mutation_test --gpu required --ops relu tg_softmax [--results results]
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from tileport.core import yamlio
from tileport.core.verdict import Finding, Verdict, VerdictError, read, write
from tileport.gpu import harness
from tileport.gpu.test import gpu_gate
from tileport.host import mutants as host_mutants
from tileport.model import manifest as tp_manifest

REPO = Path(__file__).resolve().parents[2]
BASE = host_mutants.BASE
#: the GPU column's bounds (config.yaml ``mutation``): variants per mutant (those of its edited
#: entry), test shapes and unseen shapes per variant, the wall budget per kernel and the
#: timeout of one call (seconds: the first call of a compilation includes cutile's JIT)
GPU_DEFAULTS = {"gpu_max_variants": 2, "gpu_max_shapes": 3, "gpu_budget_s": 600, "gpu_timeout_s": 120}
CAUGHT = ("test", "unseen", "crashed")
#: a mutant's call may take this many times m000's on the same case before it counts as a hang
SLACK = 3.0
#: prefix of the worker's reply lines on its stdout (anything else there is a library's print)
TAG = "TPMW "


def settings_of(cfg: dict | None) -> dict:
    """The GPU column's settings: config ``mutation``'s ``gpu_*`` keys over :data:`GPU_DEFAULTS`."""
    return {**GPU_DEFAULTS, **{k: v for k, v in (cfg or {}).items() if k in GPU_DEFAULTS}}


def _off16(e: int) -> int:
    return e + 7 if (e + 7) % 16 else e + 9


def _half(e: int) -> int:
    h = e // 2 + 1
    return h + 1 if h % 16 == 0 else h


def unseen_shapes(man: dict, kernel: str, variant, limit: int) -> list[tuple[int, ...]]:
    """Up to ``limit`` shapes the manifest never tests that fit ``kernel``'s ``variant``.

    Derived from ``test_shapes`` then ``perf_shapes`` (the bases), four ways: every extent moved
    off the 16-grid (``e + 7``, or ``e + 9`` where that is a multiple of 16), one axis moved so
    (per axis), every extent about halved (``e // 2 + 1``, never a multiple of 16 but 1 stays 1),
    and the axes reversed; a shape is kept when it is no manifest shape, has no more elements
    than the largest base, and the manifest's ``fits`` holds for it
    (:func:`tileport.gpu.harness.fits`, which also ties a shape name that is a constexpr to its
    value). Taken round-robin over the bases, base ``j`` starting at way ``j`` (mod the number of
    ways), so a small ``limit`` spans the bases' sizes and the ways: a square GEMM's bases give
    a shape with M != N among the first (the 2026-12-06 GPU run, before this order, judged
    tg_matmul on square shapes only and missed an extent read from the other axis);
    deterministic (manifest order). Raises
    :class:`tileport.gpu.harness.HarnessError` for a ``fits`` expression that fails."""
    tests = [tuple(s) for s in man["test_shapes"]]
    bases = tests + [tuple(s) for s in man.get("perf_shapes") or [] if tuple(s) not in tests]
    if not bases:
        return []
    cap = max(math.prod(s) for s in bases)
    rank = len(bases[0])
    ways = [lambda s: tuple(_off16(e) for e in s)]
    ways += [lambda s, i=i: s[:i] + (_off16(s[i]),) + s[i + 1:] for i in range(rank)] if rank > 1 else []
    ways += [lambda s: tuple(1 if e == 1 else _half(e) for e in s), lambda s: tuple(reversed(s))]
    per_base = []
    for j, b in enumerate(bases):
        got = []
        for way in ways[j % len(ways):] + ways[:j % len(ways)]:
            s = way(b)
            if (s not in bases and s not in got and math.prod(s) <= cap and min(s) >= 1
                    and harness.fits(man, list(s), variant.constexprs, kernel=kernel)):
                got.append(s)
        per_base.append(got)
    out: list[tuple[int, ...]] = []
    for s in itertools.chain.from_iterable(itertools.zip_longest(*per_base)):
        if s is not None and s not in out:
            out.append(s)
    return out[:limit]


def plan(study: dict, man: dict, kernel: str, settings: dict, built: set[str]) -> list[dict]:
    """The cases of each compiling mutant, in mutant order: ``{"id", "kind", "variants",
    "cases": [{"variant", "shape", "on": "test" | "unseen"}], "rejected"?}``.

    Variants: the mutant's own (the study's, holding the edited entry), then the study's other
    variants at IR PASS compiled to the same entry, at most ``gpu_max_variants``; cases: every
    variant's test shapes that fit (at most ``gpu_max_shapes``), then its unseen shapes (as
    many). ``built``: the mutant ids the mutant library holds; the others carry ``rejected``."""
    det = study["details"]
    entries = det.get("entries") or {}
    variants = {v.id: v for v in tp_manifest.variants(man, kernel)}
    n_var, n_shape = int(settings["gpu_max_variants"]), int(settings["gpu_max_shapes"])
    out = []
    for m in det["mutants"]:
        if not m.get("compiles"):
            continue
        rec = {"id": m["id"], "kind": m["kind"]}
        if m["id"] not in built:
            out.append({**rec, "rejected": True, "variants": [], "cases": []})
            continue
        own = [v for v in m.get("variants", []) if v in variants]
        entry = m.get("entry") or (entries.get(own[0]) if own else None)
        more = [v for v in entries if entries[v] == entry and v not in own and v in variants]
        vids = (own + more)[:n_var]
        tests, unseen = [], []
        for vid in vids:
            v = variants[vid]
            shapes = [tuple(s) for s in man["test_shapes"] if harness.fits(man, list(s), v.constexprs, kernel=kernel)]
            tests += [{"variant": vid, "shape": list(s), "on": "test"} for s in shapes[:n_shape]]
            unseen += [{"variant": vid, "shape": list(s), "on": "unseen"}
                       for s in unseen_shapes(man, kernel, v, n_shape)]
        out.append({**rec, "variants": vids, "cases": tests + unseen})
    return out


def judge(row: dict) -> tuple[str, str]:
    """``(status, why)`` of one call's row (:func:`tileport.gpu.test.check_call`'s, or the
    worker's ``timeout`` / ``died`` / ``setup_error``): ``flag`` (the numbers differ), ``crash``
    (a launch or CUDA error, a hang, the worker died), ``unusable`` (the call could not be made or
    the cuTile Python reference failed: the case judges nothing) or ``ok``."""
    if "timeout" in row:
        return "crash", f"hang: no reply within {row['timeout']} s, worker killed"
    if "died" in row:
        return "crash", f"worker died: {row['died']}"[:300]
    if "setup_error" in row:
        return "unusable", f"the call could not be built: {row['setup_error']}"[:300]
    ref, port = row.get("ref") or {}, row.get("port") or {}
    if ref.get("error"):
        return "unusable", f"the cuTile Python reference failed: {ref['error']}"[:300]
    if port.get("error"):
        what = "CUDA error" if port.get("cuda_error") else "launch error"
        return "crash", f"{what}: {port['error']}"[:300]
    if row.get("port_matches_ref") is False:
        return "flag", (f"outputs differ from the cuTile Python reference's (max abs "
                        f"{row.get('port_vs_ref_max_abs')})")
    if port.get("ok") is False and ref.get("ok") is True:
        return "flag", ("misses reference.py where the cuTile Python reference meets it: "
                        + harness.mismatch_text(port))[:300]
    return "ok", ""


def evaluate(plans: list[dict], launch, budget_s: float, clock=time.monotonic) -> tuple[list[dict], dict, str]:
    """Run the plans (:func:`plan`) through ``launch(mutant_id, case) -> row`` within
    ``budget_s`` seconds of ``clock``; returns ``(records, baseline, stopped)``.

    Each case runs ``m000`` first (once: ``baseline`` maps ``"<variant> <shape>"`` to its
    ``{"status", "why", "on"}``); a case ``m000`` does not pass judges no mutant. A mutant stops
    at its first flagged or crashed case; its record: ``outcome`` (module doc), ``on`` (test /
    unseen, where caught), ``why``, ``calls``, ``judged`` (cases per kind it ran on that judged:
    a ``missed`` with no unseen case had no unseen shape that fits). Once the budget is spent every mutant not yet
    concluded is ``not_run``; so is every one after a launcher's RuntimeError (a worker that
    cannot start: ``stopped`` holds its message)."""
    t0 = clock()
    baseline: dict[str, dict] = {}
    records, stopped = [], ""
    for p in plans:
        rec = {"id": p["id"], "kind": p["kind"], "variants": p["variants"], "calls": 0,
               "judged": {"test": 0, "unseen": 0}}
        if p.get("rejected"):
            records.append({**rec, "outcome": "rejected", "why": "the mutant library's build rejected it"})
            continue
        judged, outcome = 0, None
        for case in p["cases"]:
            if clock() - t0 > budget_s:
                outcome, rec["why"] = "not_run", f"wall budget of {budget_s} s spent"
                break
            if stopped:
                outcome, rec["why"] = "not_run", f"the worker cannot start: {stopped}"
                break
            key = f"{case['variant']} {'x'.join(map(str, case['shape']))}"
            try:
                if key not in baseline:
                    st, why = judge(launch(BASE, case))
                    baseline[key] = {"status": st, "why": why, "on": case["on"]}
                if baseline[key]["status"] != "ok":
                    continue
                st, why = judge(launch(p["id"], case))
            except RuntimeError as exc:
                stopped = str(exc)[:600]
                outcome, rec["why"] = "not_run", f"the worker cannot start: {stopped}"
                break
            rec["calls"] += 1
            if st == "unusable":
                continue
            judged += 1
            rec["judged"][case["on"]] += 1
            if st in ("flag", "crash"):
                outcome = "crashed" if st == "crash" else case["on"]
                rec.update(on=case["on"], case=key, why=why)
                break
        if outcome is None:
            outcome = "missed" if judged else "not_run"
            if not judged:
                rec["why"] = ("no case fits its variants" if not p["cases"]
                              else "the unmutated port passes no case it was run on")
        rec["outcome"] = outcome
        records.append(rec)
    return records, baseline, stopped


def column(outcome: str) -> str:
    """The report's word for a record's outcome: CAUGHT, MISSED (``rejected`` too: counted, never
    caught) or NOT_RUN."""
    return "CAUGHT" if outcome in CAUGHT else "MISSED" if outcome in ("missed", "rejected") else "NOT_RUN"


class Workers:
    """The launcher of the real column: one worker process at a time (``cmd``), restarted after
    a hang (killed after ``timeout_s``, for a mutant after at least :data:`SLACK` times what
    ``m000`` took on the same case), a death or a lost CUDA context. Calling it with
    ``(mutant_id, case)`` returns the worker's row, or ``{"timeout": s}`` / ``{"died": why}``.
    Raises RuntimeError when a fresh worker cannot start (the environment: no mutant is judged)."""

    def __init__(self, cmd: list[str], timeout_s: float, log, start_timeout_s: float = 600.0):
        self.cmd, self.timeout_s, self.log, self.start_timeout_s = cmd, timeout_s, log, start_timeout_s
        self.proc = None
        self.buf = b""
        self.starts = 0
        self.base_s: dict[tuple, float] = {}      # (variant, shape) -> seconds m000's call took

    def _read(self, deadline: float) -> dict | None:
        """The next tagged reply, or None at EOF; raises TimeoutError past ``deadline``. Reads
        the pipe's bytes itself (a buffered reader would hide a second line from ``select``)."""
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace")
                if text.startswith(TAG):
                    return json.loads(text[len(TAG):])
                self.log.write(text + "\n")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self.buf += chunk

    def _start(self) -> None:
        self.starts += 1
        self.buf = b""
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     bufsize=0, start_new_session=True, cwd=REPO)
        try:
            hello = self._read(time.monotonic() + self.start_timeout_s)
        except TimeoutError:
            hello = {"fatal": f"no ready line within {self.start_timeout_s} s"}
        if not hello or "ready" not in hello:
            self.stop()
            raise RuntimeError(f"the mutant worker did not start: {(hello or {}).get('fatal', 'it exited')}")

    def stop(self) -> None:
        """End the worker (its whole process group) if one runs."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.proc = None

    def __call__(self, mutant: str, case: dict) -> dict:
        if self.proc is None:
            self._start()
        key = (case["variant"], tuple(case["shape"]))
        # a mutant gets at least SLACK times what m000 took on the case (its JIT compile and
        # the reference's cost as much): a slow compile is no hang
        limit = max(self.timeout_s, SLACK * self.base_s.get(key, 0.0)) if mutant != BASE else self.timeout_s
        t0 = time.monotonic()
        try:
            self.proc.stdin.write((json.dumps({"mutant": mutant, **case}) + "\n").encode())
        except BrokenPipeError:         # it died after its last reply
            rc = self.proc.wait()
            self.proc = None
            return {"died": f"exit status {rc} before {mutant} {case['variant']} {case['shape']}"}
        try:
            reply = self._read(time.monotonic() + limit)
        except TimeoutError:
            self.stop()
            return {"timeout": round(limit, 1)}
        if mutant == BASE:
            self.base_s[key] = time.monotonic() - t0
        if reply is None:
            rc = self.proc.wait()
            self.proc = None
            return {"died": f"exit status {rc} during {mutant} {case['variant']} {case['shape']}"}
        if reply.get("restart"):
            self.stop()
        return reply["row"]


def worker(cfg: dict) -> int:
    """The worker loop (``--worker <json>``): load the operator and the mutant library once, say
    ready, then for each job line on stdin build the call (:func:`tileport.gpu.harness.build_call`
    with the mutant's symbol) and answer :func:`tileport.gpu.test.check_call`'s row; exit after a
    CUDA error (its context is lost)."""
    def say(d):
        sys.stdout.write(TAG + json.dumps(d, default=str) + "\n")
        sys.stdout.flush()

    try:
        from tileport.core import source
        from tileport.gpu.test import check_call
        from tileport.host.ffi import HostLibrary

        op, kernel, op_dir, results = cfg["op"], cfg["kernel"], Path(cfg["op_dir"]), Path(cfg["results"])
        man = tp_manifest.load(op_dir / "manifest.yaml")
        kmod = harness.load_module(source.kernel_py(op_dir), f"tileport_ref_{op}")
        rmod = harness.load_module(op_dir / "reference.py", f"tileport_torch_{op}")
        params = {k["name"]: k["params"] for k in read(results / op / "analysis.json")["details"]["kernels"]}[kernel]
        lib = HostLibrary(cfg["library"], [cfg["ffi_json"]])
        symbols = {(f["mutant"], v): s for s, f in lib.functions.items() for v in f["variants"]}
        variants = {v.id: v for v in tp_manifest.variants(man, kernel)}
    except Exception as exc:  # noqa: BLE001 - told to the parent, which stops the column
        say({"fatal": f"{type(exc).__name__}: {exc}"[:1500]})
        return 2
    say({"ready": True})
    for line in sys.stdin:
        job = json.loads(line)
        variant, shape = variants[job["variant"]], tuple(job["shape"])
        sym = symbols.get((job["mutant"], variant.id))
        if sym is None:
            say({"row": {"setup_error": f"the mutant library has no shim of {job['mutant']} for {variant.id}"}})
            continue
        try:
            c = harness.build_call(op_dir, man, kmod, rmod, params, kernel, variant, shape, lib, sym,
                                   seed=cfg["seed"])
            tol = harness.tolerance(man, variant, shape)
        except Exception as exc:  # noqa: BLE001 - an unseen shape the manifest's expressions refuse
            say({"row": {"setup_error": f"{type(exc).__name__}: {exc}"[:800]}})
            continue
        try:
            row = check_call(c, tol)       # each side's own failure is in the row
        except Exception as exc:  # noqa: BLE001 - reference.py's expected values at this shape
            row = {"setup_error": f"{type(exc).__name__}: {exc}"[:800]}
        del c
        dead = bool((row.get("port") or {}).get("cuda_error") or (row.get("ref") or {}).get("cuda_error"))
        say({"row": row, "restart": dead})
        if dead:
            return 3
    return 0


def run(op: str, kernel: str, mutation_json, out_json, gpu: str = "auto", host_json=None,
        op_dir=None, results=None, settings: dict | None = None, seed: int = 0, launch=None) -> dict:
    """Write the GPU column's verdict for one kernel's mutants (module doc); never raises on a
    missing GPU or bad input.

    ``host_json``: the ``mutation_host`` verdict (default ``<kernel>.host.json`` beside
    ``mutation_json``; its library is read from ``<kernel>.host/`` beside it, wherever the tree
    was copied). ``launch``: a launcher to use instead of GPU workers (``(mutant_id, case) ->
    row``; tests), which skips the GPU gate. Verdict DONE (every mutant judged or rejected), DONE
    with a warning per mutant left NOT_RUN, FAIL owner ``tool`` when the unmutated port fails
    every case (no mutant can be judged), BLOCKED (no study, no mutant library or one built from
    other sources), ERROR (the worker cannot start), NOT_RUN without a GPU."""
    s = settings_of(settings)
    base = dict(stage="mutation_gpu", op=op, kernel=kernel)
    mutation_json = Path(mutation_json)
    host_json = Path(host_json) if host_json else mutation_json.with_name(f"{kernel}.host.json")
    if launch is None:
        gated = gpu_gate("mutation_gpu", op, gpu, out_json)
        if gated is not None:
            return gated
    try:
        study = read(mutation_json)
        host = read(host_json)
    except VerdictError as exc:
        return write(Verdict(**base, verdict="BLOCKED", owner="tool", summary=str(exc)[:1500]), out_json)
    if "mutants" not in (study.get("details") or {}):
        return write(Verdict(**base, verdict="BLOCKED", owner=study.get("owner") or "tool",
                             summary=f"no mutants: the study is {study['verdict']}: {study['summary']}"[:1500]),
                     out_json)
    if host["verdict"] not in ("PASS", "PASS_WITH_NOTES"):
        return write(Verdict(**base, verdict="BLOCKED", owner=host.get("owner") or "tool",
                             summary=f"no mutant library: {host['summary']}"[:1500]), out_json)
    hdir = host_json.with_name(f"{kernel}.host")
    work = mutation_json.with_name(kernel)
    built = set(host["details"]["mutants"])
    try:
        now = host_mutants.sources_sha(work, kernel, sorted(built))
    except OSError as exc:
        now = f"unreadable: {exc}"
    if now != host["details"].get("sources_sha"):
        return write(Verdict(**base, verdict="BLOCKED", owner="tool",
                             summary=f"{hdir / host_mutants.LIB} was built from other mutants than {work} holds "
                                     f"now ({now[:40]}): rebuild it (rule mutation_host)"), out_json)
    op_dir = Path(op_dir) if op_dir else REPO / "operators" / op
    results = Path(results) if results else mutation_json.parents[2]
    try:
        man = tp_manifest.load(op_dir / "manifest.yaml")
        plans = plan(study, man, kernel, s, built)
    except (tp_manifest.ManifestError, harness.HarnessError, KeyError) as exc:
        return write(Verdict(**base, verdict="ERROR", owner="manifest", summary=str(exc)[:1500]), out_json)
    t0 = time.monotonic()
    workers = None
    if launch is None:
        cfg = {"op": op, "kernel": kernel, "op_dir": str(Path(op_dir).resolve()),
               "results": str(Path(results).resolve()), "library": str((hdir / host_mutants.LIB).resolve()),
               "ffi_json": str((hdir / "ffi.json").resolve()),
               "seed": seed}
        log = open(Path(out_json).with_suffix(".log"), "a")
        workers = launch = Workers([sys.executable, "-m", "tileport.gpu.mutation_test", "--worker", json.dumps(cfg)],
                                   float(s["gpu_timeout_s"]), log)
    try:
        records, baseline, stopped = evaluate(plans, launch, float(s["gpu_budget_s"]))
    finally:
        if workers is not None:
            workers.stop()
            workers.log.close()
    counts = {o: sum(r["outcome"] == o for r in records)
              for o in ("test", "unseen", "crashed", "missed", "rejected", "not_run")}
    fp = sorted(k for k, b in baseline.items() if b["status"] != "ok")
    details = {"settings": s, "records": records, "mutants": {r["id"]: column(r["outcome"]) for r in records},
               "counts": counts, "baseline": baseline, "false_positives": fp,
               "seconds": round(time.monotonic() - t0, 1), "workers_started": workers.starts if workers else None}
    judged = sum(r["outcome"] in CAUGHT + ("missed",) for r in records)
    summary = (f"{len(records)} compiling mutant(s): caught on test shapes {counts['test']}, only on unseen shapes "
               f"{counts['unseen']}, by a crash {counts['crashed']}; missed {counts['missed']}; rejected by the "
               f"library build {counts['rejected']}; not run {counts['not_run']}; the unmutated port fails "
               f"{len(fp)} of {len(baseline)} case(s)")
    findings = [Finding("numerics", "warn", "tool", f"{BASE} (the unmutated port) {k}: {baseline[k]['why']}")
                for k in fp]
    findings += [Finding("environment", "warn", "env", f"{r['id']} ({r['kind']}) NOT_RUN: {r.get('why', '')}")
                 for r in records if r["outcome"] == "not_run"]
    if stopped and not any(r["outcome"] in CAUGHT + ("missed",) for r in records):
        return write(Verdict(**base, verdict="ERROR", owner="env", fail_class="env", summary=stopped[:1500],
                             findings=[Finding("environment", "critical", "env", stopped[:1500])],
                             details=details), out_json)
    if baseline and len(fp) == len(baseline) and not judged:
        return write(Verdict(**base, verdict="FAIL", owner="tool", summary="the unmutated port fails every case: "
                             + summary, findings=findings[:40], details=details), out_json)
    return write(Verdict(**base, verdict="DONE", summary=summary, findings=findings[:40], details=details), out_json)


def main(argv=None) -> int:
    """Command line: the column for every kernel study under ``<results>/mutation/<op>/`` of the
    given operators (or ``--worker <json>``, the worker loop). Exit 0 when every kernel was
    measured or not run, 1 otherwise."""
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--worker"]:
        return worker(json.loads(argv[1]))
    ap = argparse.ArgumentParser(description="tileport mutation study: the numeric-test column on a GPU",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--ops", nargs="+", required=True, help="operators whose kernels' mutants to run")
    ap.add_argument("--results", default="results", help="results tree built by the CPU stages")
    ap.add_argument("--operators", default=str(REPO / "operators"), help="operators folder")
    ap.add_argument("--config", default=str(REPO / "config.yaml"), help="config.yaml: mutation.gpu_*, gpu, bench.seed")
    ap.add_argument("--gpu", choices=("auto", "required", "off"), default=None, help="default: config.yaml's gpu")
    ap.add_argument("--kernels", nargs="+", default=None,
                    help="only these kernels' studies (one process per kernel runs them side by side)")
    a = ap.parse_args(argv)
    cfg = yamlio.load_file(a.config) or {}
    gpu = a.gpu or cfg.get("gpu", "auto")
    seed = (cfg.get("bench") or {}).get("seed", 0)
    status = 0
    for op in a.ops:
        studies = sorted(p for p in (Path(a.results) / "mutation" / op).glob("*.json")
                         if p.name.count(".") == 1 and (a.kernels is None or p.stem in a.kernels))
        if not studies:
            print(f"{op}: no study under {Path(a.results) / 'mutation' / op}"
                  + (f" for kernels {' '.join(a.kernels)}" if a.kernels else ""), file=sys.stderr)
            status = 1
        for p in studies:
            d = run(op, p.stem, p, p.with_name(f"{p.stem}.gpu.json"), gpu=gpu, op_dir=Path(a.operators) / op,
                    results=a.results, settings=cfg.get("mutation"), seed=seed)
            print(f"{op} {p.stem}: {d['verdict']} {d['summary']}")
            status |= d["verdict"] not in ("DONE", "NOT_RUN")
    return status


if __name__ == "__main__":
    sys.exit(main())
