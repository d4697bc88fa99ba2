"""Folding the GPU stages' rows into verdicts: the part of gpu_test and bench that
:mod:`tileport.gpu.kept` needs to re-judge a kept measurement, so that it sits below both.

* :func:`fold`: bench rows (one per perf config, times in µs, ratios reference / port) to the
  bench verdict; pure. Its loop gate (:func:`loop_gate`, :func:`loop_class`) and settings
  (:data:`DEFAULTS`, config.yaml ``bench``).
* :data:`COLUMNS`, :data:`ROW_EXTRAS`, :func:`write_csv`: bench.csv and ``details.rows``.
* :data:`MEASURED`: the verdict words that hold a GPU measurement; :func:`owner_of`,
  :func:`routed`, :func:`port_writers`: who must act on a failure (gpu_test uses them too).
* :func:`time_floor`, :func:`implausible`: the least device time a call can take; a config timed
  under it is a measurement error, never folded.

:mod:`tileport.gpu.bench` and :mod:`tileport.gpu.test` import (and re-export) the names callers
know them by (``bench.fold``, ``bench.DEFAULTS``, ``gpu_test.MEASURED``, ...).
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from tileport.core import stats
from tileport.core.verdict import (
    FAIL_CLASSES,
    TEST_PASSED,
    Finding,
    Verdict,
    VerdictError,
    atomic_write_text,
    brief,
    port_fault,
    read,
)
from tileport.model.defects import covering

#: the verdict words of a GPU measurement (gpu_test's and bench's): what a GPU-less run keeps
MEASURED = TEST_PASSED + ("FAIL", "DONE", "BELOW_THRESHOLD")
#: the bench verdict words of a measurement (its rows can be re-judged: :meth:`tileport.gpu.kept.Kept.reconcile`)
BENCH_MEASURED = ("DONE", "BELOW_THRESHOLD", "FAIL")

#: config.yaml ``bench`` defaults (``*_ms``: milliseconds, ``l2_flush_mib``: MiB, ``loop_max_s``: seconds)
DEFAULTS = {"threshold": 0.95, "warmup_ms": 20, "rep_ms": 150, "min_reps": 10, "max_reps": 100,
            "l2_flush_mib": 256, "seed": 0, "loop_threshold": 0.97, "loop_ms": 20, "loop_min_cycles": 3,
            "loop_max_cycles": 30, "loop_ci_width": 0.01, "loop_max_s": 3.0}


#: the version of the measurement a row comes from (``harness`` in bench.csv): 2 = every side
#: launches on one stream fetched once per call object (the reference used to look it up per
#: call), loops with an interval over carry-over-balanced cycles, the matched reading beside the
#: launched one. Rows of another version (or none: older harnesses) are listed, never gated
#: (:func:`loop_gate`)
HARNESS = 2

#: bench.csv's columns, one row per perf config (times in µs; ratios reference / port)
COLUMNS = ["op", "kernel", "variant", "shape", "grid", "reps", "ref_us", "port_us", "torch_us",
           "ref_iqr_us", "port_iqr_us", "torch_iqr_us", "ratio", "paired_ratio", "vs_torch",
           "ref_vs_torch", "ref_launches", "port_launches", "torch_launches",
           "ref_loop_us", "port_loop_us", "torch_loop_us", "loop_ratio", "loop_calls",
           "ref_host_us", "port_host_us", "torch_host_us",
           "port_host_overhead_us", "ref_host_overhead_us", "checked", "ref_checked",
           "port_mismatch", "ref_mismatch", "error",
           "nv_us", "nv_iqr_us", "vs_nv", "ref_vs_nv", "nv_launches", "nv_loop_us", "nv_checked",
           "nv_error", "loop_ratio_lo", "loop_ratio_hi", "loop_cycles", "loop_ratio_prev", "timed_at",
           "harness", "ref_matched_us", "ref_matched_iqr_us", "ref_matched_launches", "ratio_matched",
           "matched_gain", "matched_checked", "matched_mismatch", "matched_error", "matched_notes",
           "matched_symbol"]
#: the per-side columns of NVIDIA's port (empty when it is not a side of the config)
NV_COLUMNS = COLUMNS[COLUMNS.index("nv_us"):COLUMNS.index("nv_error") + 1]

#: the least CUPTI device time (µs) of a call that launches a kernel. Evidence: the smallest of the
#: 1594 per-config medians published in docs/results/h200/ops/*/bench.csv (ref_us, port_us,
#: torch_us, nv_us; 46 operators) is 1.056 µs (tg_relu bf16 N=1000, tg_moe_align_block 32x8);
#: the floor sits a factor 4 below it
LAUNCH_FLOOR_US = 0.25
#: peak DRAM bandwidth (B/s) by a word of the device name (:func:`tileport.gpu.harness.env_versions`
#: ``device``): H200 4.8 TB/s (NVIDIA H200 Tensor Core GPU datasheet, SXM and NVL)
PEAK_DRAM_BPS = {"H200": 4.8e12}


def peak_bandwidth(device: str | None) -> float | None:
    """Peak DRAM bandwidth (B/s) of ``device`` (``NVIDIA H200``) from :data:`PEAK_DRAM_BPS`; None
    for a device it does not list."""
    words = str(device or "").replace("-", " ").split()
    return next((bps for name, bps in PEAK_DRAM_BPS.items() if name in words), None)


def time_floor(out_bytes: int | None, device: str | None) -> dict:
    """The least device time (µs) of one call: the larger of :data:`LAUNCH_FLOOR_US` and
    ``out_bytes`` (the bytes the call must write: its outputs that start without given values,
    so a correct call overwrites every element) / the device's peak DRAM bandwidth
    (:func:`peak_bandwidth`; an unknown device or ``out_bytes`` None: the launch floor alone).
    The published H200 configs run at 2.24x that bytes floor or more (fastest: relu f16 2^27
    elements, 125.5 µs for 268 MB; docs/results/h200/ops/*/bench.csv against the manifests'
    output tensors). Returns ``{"floor_us", "bound"`` (``launch`` or ``bytes``)``, "launch_us",
    "bytes_us"`` (None when not applied)``, "out_bytes", "peak_bps", "device"}``."""
    bps = peak_bandwidth(device)
    nbytes = out_bytes if isinstance(out_bytes, int) and not isinstance(out_bytes, bool) else None
    bytes_us = nbytes / bps * 1e6 if bps and nbytes is not None else None
    bound = "bytes" if bytes_us is not None and bytes_us > LAUNCH_FLOOR_US else "launch"
    return {"floor_us": bytes_us if bound == "bytes" else LAUNCH_FLOOR_US, "bound": bound,
            "launch_us": LAUNCH_FLOOR_US, "bytes_us": bytes_us, "out_bytes": nbytes, "peak_bps": bps,
            "device": device}


def implausible(row: dict, device: str | None = None) -> dict | None:
    """The evidence that a timed row's reference or port device time (``ref_us``, ``port_us``, µs)
    is under what the hardware can do for its work (:func:`time_floor` of its ``out_bytes`` on
    ``device``), else None: ``{"sides"`` (those under it), ``"ref_us", "port_us",
    "ref_launches", "port_launches"``, and :func:`time_floor`'s fields``}``. A time that is no
    number (not timed) is not judged; NaN is under every floor."""
    fl = time_floor(row.get("out_bytes"), device)
    times = {s: row.get(f"{s}_us") for s in ("ref", "port")}
    under = [s for s, t in times.items() if isinstance(t, (int, float)) and not isinstance(t, bool)
             and not t >= fl["floor_us"]]
    if not under:
        return None
    return {"sides": under, **{f"{s}_us": t for s, t in times.items()},
            **{f"{s}_launches": row.get(f"{s}_launches") for s in ("ref", "port")}, **fl}


def implausible_text(ev: dict) -> str:
    """One line naming an :func:`implausible` finding: the times, the floor and its bound."""
    why = (f"{ev['out_bytes']} bytes written / {ev['peak_bps'] / 1e12:g} TB/s peak DRAM bandwidth of the "
           f"{ev['device']}" if ev["bound"] == "bytes" else
           "4x under the smallest kernel time published for the H200, 1.056 µs")
    times = ", ".join(f"{s} {ev[f'{s}_us']!r} µs ({ev[f'{s}_launches']} launch(es))" for s in ev["sides"])
    return (f"implausible device time: {times} < floor {ev['floor_us']:.4g} µs ({ev['bound']} bound: {why}): "
            f"a measurement error, not folded")


def mark_implausible(rows: list, device: str | None = None) -> list:
    """``rows`` with every timed row (no ``error``) that :func:`implausible` flags replaced by a
    copy carrying ``error`` (:func:`implausible_text`) and ``implausible`` (the evidence), as
    :func:`tileport.gpu.bench.measure` marks one, so that readers that skip rows with an error skip
    it. Other entries are returned as they are."""
    out = []
    for r in rows:
        ev = implausible(r, device) if isinstance(r, dict) and not r.get("error") else None
        out.append({**r, "error": implausible_text(ev), "implausible": ev} if ev else r)
    return out


def positive(x) -> bool:
    """``x`` is a finite number > 0 (a time or ratio that a geomean takes)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x < float("inf")


def torch_timed(row: dict) -> bool:
    """PyTorch's side of ``row`` was timed: ``torch_us``, ``vs_torch`` and ``ref_vs_torch`` are
    positive numbers (a torch call that launched no kernel has none: ``torch_note``)."""
    return all(positive(row.get(k)) for k in ("torch_us", "vs_torch", "ref_vs_torch"))


def port_writers(results: Path, op: str) -> dict[str, str | None]:
    """kernel -> the backend that wrote its port (``write_kernel/<kernel>.json``
    ``details.backend``: ``translator`` or an LLM backend); {} when unreadable."""
    out = {}
    for f in sorted((results / op / "write_kernel").glob("*.json")):
        try:
            out[f.stem] = (read(f).get("details") or {}).get("backend")
        except VerdictError:
            continue
    return out


def owner_of(fail_class: str, writer: str | None) -> str:
    """The owner of a failure of routing class ``fail_class`` in a port written by ``writer``:
    a wrong port (``kernel``: its output, a CUDA error it raised, its device time) is the
    translator's when the translator wrote it (``tool``, :func:`tileport.core.verdict.port_fault`);
    ``host``, ``env``, ``manifest``, ``tool`` name themselves."""
    return port_fault(writer, "kernel", "")[0] if fail_class == "kernel" else fail_class


def routed(owner: str) -> str | None:
    """The ``fail_class`` (route) of a verdict whose owner is ``owner``: the owner where a GPU-stage
    route acts on it (:data:`tileport.core.verdict.FAIL_CLASSES`), else None (``tool``, ``manifest``,
    ``compiler``: no kernel writer or host builder can fix it; the routes stop)."""
    return owner if owner in FAIL_CLASSES else None


def current_harness(row: dict) -> bool:
    """Whether ``row`` was timed by this benchmark's harness (``harness`` == :data:`HARNESS`; a
    CSV's text or float reads the same). Rows of older harnesses looked the stream up per
    reference call and some used another loop estimator: their loop ratios are not comparable."""
    try:
        return int(float(row.get("harness"))) == HARNESS
    except (TypeError, ValueError):
        return False


def loop_class(row: dict, loop_threshold: float) -> str | None:
    """One config's side of the loop gate (the one definition :func:`loop_gate`, the summary and
    the report use): None when ``row`` has no loop time (``loop_ratio`` not a number), ``pass``
    when ``loop_ratio`` >= ``loop_threshold`` (config.yaml ``bench.loop_threshold``), ``below``
    when it is under it and its 95 % interval says so (``loop_ratio_hi`` < threshold; a row
    without an interval, timed before the benchmark had one, by its loop ratio alone), else
    ``undecided`` (under it, the interval reaching it: within the measurement's noise). A row of
    another harness (:func:`current_harness`) is not gated: None."""
    ratio = row.get("loop_ratio")
    if not isinstance(ratio, (int, float)) or not current_harness(row):
        return None
    if ratio >= loop_threshold:
        return "pass"
    hi = row.get("loop_ratio_hi")
    return "below" if not isinstance(hi, (int, float)) or hi < loop_threshold else "undecided"


def matched_rows(rows: list[dict]) -> list[dict]:
    """The rows with a matched reading: ``ratio_matched`` a positive number and the matched
    reference's output within tolerance (``matched_checked`` not MISMATCH)."""
    return [r for r in rows if isinstance(r.get("ratio_matched"), (int, float)) and r["ratio_matched"] > 0
            and r.get("matched_checked") != "MISMATCH"]


def loop_gate(rows: list[dict], loop_threshold: float) -> dict | None:
    """The loop gate over the rows that carry a loop time (None when none does): ``geomean``
    of ``loop_ratio``, ``threshold``, ``verdict`` DONE / BELOW_THRESHOLD (the geomean against
    the threshold), ``below`` (every config whose loop ratio is under the threshold and whose
    95 % interval says so, ``loop_ratio_hi`` < threshold -- a row without an interval, timed
    before the benchmark had one, by its loop ratio alone -- lowest first, with its loop and host
    times per call), ``undecided`` (loop ratio under the threshold, interval reaching it: the
    measurement cannot tell; the same fields): per config :func:`loop_class`;
    ``port_host_us`` / ``ref_host_us`` (medians over the configs of the host time per call, µs).
    Only rows of the current harness count (:func:`current_harness`); ``other_harness``: how many
    rows with a loop time came from another."""
    timed = [r for r in rows if loop_class(r, loop_threshold) is not None]
    if not timed:
        return None
    g = stats.geomean([r["loop_ratio"] for r in timed])
    under = sorted((r for r in timed if r["loop_ratio"] < loop_threshold), key=lambda r: r["loop_ratio"])
    keys = ("kernel", "variant", "shape", "loop_ratio", "loop_ratio_lo", "loop_ratio_hi", "ref_loop_us",
            "port_loop_us", "ref_host_us", "port_host_us", "ref_us", "port_us")
    other = sum(1 for r in rows if isinstance(r.get("loop_ratio"), (int, float)) and not current_harness(r))
    return {"geomean": g, "threshold": loop_threshold, "configs": len(timed), "other_harness": other,
            "verdict": "DONE" if g >= loop_threshold else "BELOW_THRESHOLD",
            **{c: [{k: r.get(k) for k in keys} for r in under if loop_class(r, loop_threshold) == c]
               for c in ("below", "undecided")},
            "port_host_us": stats.median([r["port_host_us"] for r in timed]),
            "ref_host_us": stats.median([r["ref_host_us"] for r in timed])}


def fold(op: str, rows: list[dict], threshold: float, attempt: int = 1, env=None,
         secs: float = 0.0, failed_test: dict | None = None,
         loop_threshold: float = DEFAULTS["loop_threshold"], writers: dict | None = None,
         pending: list[dict] | None = None, defects: list | None = None) -> Verdict:
    """The operator's verdict from its bench rows (pure: unit-tested without a GPU).

    Whose fault: a row with ``blocked`` is a config that cannot be timed, a warning listed in
    ``details.blocked_configs``, and the other configs are judged without it (BLOCKED when it
    leaves none): one cutile 0.5.0 cannot launch (:func:`tileport.host.ffi.cutile_limit`), owner
    ``tool``; one the cuTile Python reference cannot run (``blocked_side`` ``ref``), owner
    ``manifest`` (:func:`blocked_owner`). A row's ``error`` has the routing class ``error_class``
    (:func:`tileport.gpu.test.failure_class`: ``host`` for a shim's refusal) and the owner
    :func:`owner_of` gives it (``writers``: kernel -> backend; a wrong or slow
    port the translator wrote is ``tool``).

    A row whose reference or port device time is under the hardware's floor (:func:`implausible`
    on ``env["device"]``; marked by the benchmark with ``error`` and ``implausible``, or found
    here in a row timed before that) is a measurement error: a warning (owner ``tool``) with its
    evidence in ``details.implausible_configs``, excluded from every geomean and named in the
    summary; ERROR when it leaves no config. Its timed output is still checked.

    Geomeans over the configs that ran: ``ratio`` (ref/port), ``vs_torch`` (torch/port),
    ``ref_vs_torch`` (torch/ref; both over the configs where PyTorch was timed, :func:`torch_timed`:
    a torch call that launched no kernel has no figures, ``details.torch_not_timed``, and None
    when none was); per ``kernel/variant`` the same over its configs plus the
    geomean of its per-config medians (``ref_us``, ``port_us``, ``torch_us``) and of
    ``loop_ratio``. The verdict word judges device time; ``details.loop`` is the loop gate
    (:func:`loop_gate`, ``loop_threshold``), ``details.ref_behind_torch`` the configs whose
    reference is slower than PyTorch, lowest ``ref_vs_torch`` first.
    ``failed_test``: the gpu_test verdict when some variants failed it (they are not timed);
    if that left nothing to time, the BLOCKED verdict says so and carries its ``fail_class``.
    ``details.failed_variants``: the ``kernel/variant`` keys with a critical finding (a config
    that failed to run, a timed output outside tolerance), sorted: a FAIL is the operator's
    verdict, and summary.csv shows it on these variants only.
    ``pending``: the perf configs (``{"kernel", "variant", "shape"}``) of benchmarked variants no
    row covers yet (not timed since perf shapes were added, or after a lost CUDA context):
    ``details.pending_configs`` / ``configs_pending`` / ``configs_total``; the verdict word judges
    the timed configs and its summary says ``over 12 of 18 config(s), 6 pending``; NOT_RUN
    when nothing is timed yet.
    ``defects``: the manifest's declared defects of the kernel (:func:`tileport.model.defects.declared`):
    a timed output that misses the PyTorch semantics as the reference's does (the port within
    tolerance of it) on a variant one covers is the kernel's known defect, a warning (owner
    ``kernel``, ``details.known_defect_configs``), and the config counts, as in gpu_test; without
    a declaration it stays a failure (owner ``manifest``), and a port that differs from the
    reference stays the port's.
    """
    writers = writers or {}
    cover = covering(list(defects or []))
    shown = []              # configs whose timed outputs show a declared defect of the kernel
    rows = mark_implausible(rows, env.get("device") if isinstance(env, dict) else None)
    odd = [r for r in rows if r.get("error") and r.get("implausible")]
    ok = [r for r in rows if not r.get("error")]
    blocked = [r for r in rows if r.get("error") and r.get("blocked") and not r.get("implausible")]
    errs = [r for r in rows if r.get("error") and not r.get("blocked") and not r.get("implausible")]
    classes = []            # (routing class, owner) of every critical finding, in order
    failed = set()          # kernel/variant keys with a critical finding
    findings = []
    for r in errs:
        fc = r.get("error_class") or "kernel"
        findings.append(Finding("launch", "critical", owner_of(fc, writers.get(r["kernel"])),
                                f"{r['kernel']}/{r['variant']} {r['shape']}: {r['error']}"))
        classes.append((fc, findings[-1].owner))
        failed.add(f"{r['kernel']}/{r['variant']}")
    for r in ok + [r for r in odd if r.get("checked")]:     # a wrong output fails, however it was timed
        if r.get("checked") == "MISMATCH":
            # as gpu_test.same_miss: a port that misses the same way as the cuTile Python kernel
            # (within tolerance of it) is the manifest's: its expected values disagree with the kernel
            same = r.get("ref_checked") == "MISMATCH" and r.get("port_matches_ref") is True
            declared = cover.get((r["kernel"], r["variant"])) or []
            if same and declared:       # the kernel's declared defect: the port is faithful
                d = declared[0]
                shown.append({"kernel": r["kernel"], "variant": r["variant"], "shape": r["shape"],
                              "declared": d.label})
                findings.append(Finding("numerics", "warn", "kernel",
                                        f"{r['kernel']}/{r['variant']} {r['shape']}: the timed outputs of the port "
                                        f"and of the cuTile Python reference miss the PyTorch semantics alike: a "
                                        f"known defect of the kernel, declared in {d.label}: {d.kernel} at "
                                        f"{d.where} ({r.get('port_mismatch') or 'mismatch'})"[:1500],
                                        ref={"file": d.file, "line": d.line}))
                continue
            # whose fault first: a summary keeps about the message's first 300 characters (brief)
            miss = r.get("port_mismatch") or "mismatch"
            findings.append(Finding("numerics", "critical",
                                    "manifest" if same else owner_of("kernel", writers.get(r["kernel"])),
                                    f"{r['kernel']}/{r['variant']} {r['shape']}: "
                                    + (f"the port agrees with the cuTile Python reference; both miss the "
                                       f"PyTorch semantics, so the manifest's tolerance or inputs are wrong, "
                                       f"not the port ({miss})" if same
                                       else f"the port's timed output is outside tolerance: {miss}")))
            classes.append(("manifest" if same else "kernel", findings[-1].owner))
            failed.add(f"{r['kernel']}/{r['variant']}")
    findings += [Finding("launch", "warn", blocked_owner(r),
                         f"{r['kernel']}/{r['variant']} {r['shape']}: BLOCKED: "
                         + (f"the cuTile Python reference cannot run this config (a perf shape the kernel does "
                            f"not run: the manifest's perf_shapes / perf_fits): {r['error']}"
                            if blocked_owner(r) == "manifest" else r["blocked"]
                            if blocked_owner(r) == "env" else
                            f"cutile 0.5.0 cannot launch this config: {r['error']} (evidence: {r['blocked']})")
                         [:1500]) for r in blocked]
    # a device time under the hardware's floor: the measurement is wrong, not the port (owner tool:
    # tileport's CUPTI attribution); excluded from every geomean, named, never folded
    findings += [Finding("performance", "warn", "tool",
                         f"{r['kernel']}/{r['variant']} {r['shape']}: {r['error']}; time it again: python -m "
                         f"tileport.gpu.bench --op {op} --configs '{r['kernel']}/{r['variant']}/{r['shape']}'"
                         [:1500]) for r in odd]
    # the matched reading (the reference under the port's launch facts): its failure or a wrong
    # output is tileport's (the facts are derived from the call's own tensors), never the port's
    findings += [Finding("performance", "warn", "tool",
                         (f"{r['kernel']}/{r['variant']} {r['shape']}: the matched reference "
                          + (f"failed: {r['matched_error']}" if r.get("matched_error") else
                             f"is outside tolerance: {r.get('matched_mismatch') or 'mismatch'}")
                          + ": no matched reading for this config")[:1500])
                 for r in ok if r.get("matched_error") or r.get("matched_checked") == "MISMATCH"]
    torchless = [r for r in ok if not torch_timed(r)]
    findings += [Finding("performance", "info", "tool",
                         f"{r['kernel']}/{r['variant']} {r['shape']}: {r.get('torch_note') or 'PyTorch not timed'}: "
                         f"no torch comparison for this config") for r in torchless]
    # as in gpu_test: the cuTile Python reference failing the PyTorch semantics at a perf shape is
    # worth a warning (a tolerance or an input range to look at), not a failure of the port
    known = {(x["kernel"], x["variant"], x["shape"]) for x in shown}
    findings += [Finding("numerics", "warn", "kernel",
                         f"{r['kernel']}/{r['variant']} {r['shape']}: the cuTile Python reference "
                         f"itself fails the check: {r.get('ref_mismatch') or 'mismatch'}")
                 for r in ok if r.get("ref_checked") == "MISMATCH"
                 and (r["kernel"], r["variant"], r["shape"]) not in known]
    per_variant: dict[str, dict] = {}
    for r in ok:
        per_variant.setdefault(f"{r['kernel']}/{r['variant']}", []).append(r)
    variants = {}
    for key, rs in per_variant.items():
        ts = [r for r in rs if torch_timed(r)]      # torch's figures: over the configs where it ran
        variants[key] = {"configs": len(rs),
                         "ratio": stats.geomean([r["ratio"] for r in rs]),
                         "vs_torch": stats.geomean([r["vs_torch"] for r in ts]) if ts else None,
                         "ref_us": stats.geomean([r["ref_us"] for r in rs]),
                         "port_us": stats.geomean([r["port_us"] for r in rs]),
                         "torch_us": stats.geomean([r["torch_us"] for r in ts]) if ts else None,
                         "ref_vs_torch": stats.geomean([r["ref_vs_torch"] for r in ts]) if ts else None}
        if len(ts) < len(rs):
            variants[key]["torch_configs"] = len(ts)
        if all(isinstance(r.get("loop_ratio"), (int, float)) for r in rs):
            variants[key]["loop_ratio"] = stats.geomean([r["loop_ratio"] for r in rs])
        mt = matched_rows(rs)
        if mt:          # the matched reading, over the configs that have it
            variants[key].update(matched_configs=len(mt), ratio_matched=stats.geomean([r["ratio_matched"] for r in mt]))
        nv = [r for r in rs if isinstance(r.get("nv_us"), (int, float))]
        if nv:          # NVIDIA's port, over the configs where it was a side
            variants[key].update(nv_configs=len(nv), nv_us=stats.geomean([r["nv_us"] for r in nv]),
                                 vs_nv=stats.geomean([r["vs_nv"] for r in nv]))
    pending = list(pending or [])
    details = {"threshold": threshold, "configs": len(ok), "variants": variants, "env": env or {},
               "seconds": secs, "configs_pending": len(pending),
               "configs_total": len(rows) + len(pending), "pending_configs": pending}
    if shown:
        details["known_defect_configs"] = shown
    if blocked:
        details["blocked_configs"] = [{"kernel": r["kernel"], "variant": r["variant"], "shape": r["shape"],
                                       "owner": blocked_owner(r), "error": r["error"], "evidence": r["blocked"]}
                                      for r in blocked]
    if odd:
        details["implausible_configs"] = [{"kernel": r["kernel"], "variant": r["variant"], "shape": r["shape"],
                                           "owner": "tool", "error": r["error"], "evidence": r["implausible"]}
                                          for r in odd]
    if torchless:
        details["torch_not_timed"] = [{"kernel": r["kernel"], "variant": r["variant"], "shape": r["shape"],
                                       "note": r.get("torch_note") or "PyTorch not timed"} for r in torchless]
    loop = loop_gate(ok, loop_threshold)
    if loop is not None:
        details["loop"] = loop
    timed_torch = [r for r in ok if torch_timed(r)]
    details["ref_behind_torch"] = [
        {k: r[k] for k in ("kernel", "variant", "shape", "ref_vs_torch", "ref_us", "torch_us")}
        for r in sorted(timed_torch, key=lambda r: r["ref_vs_torch"]) if r["ref_vs_torch"] < 1.0]
    if ok:
        details["geomean_ratio"] = stats.geomean([r["ratio"] for r in ok])
        details["geomean_vs_torch"] = (stats.geomean([r["vs_torch"] for r in timed_torch])
                                       if timed_torch else None)
        details["geomean_ref_vs_torch"] = (stats.geomean([r["ref_vs_torch"] for r in timed_torch])
                                           if timed_torch else None)
        mt = matched_rows(ok)
        if mt:
            details["matched_configs"] = len(mt)
            details["geomean_ratio_matched"] = stats.geomean([r["ratio_matched"] for r in mt])
        nv = [r for r in ok if isinstance(r.get("vs_nv"), (int, float))]
        if nv:
            details["nv_configs"] = len(nv)
            details["geomean_vs_nv"] = stats.geomean([r["vs_nv"] for r in nv])
            details["geomean_ref_vs_nv"] = stats.geomean([r["ref_vs_nv"] for r in nv])
        worst = sorted(ok, key=lambda r: r["ratio"])[:3]
        details["worst_configs"] = [{k: r[k] for k in ("kernel", "variant", "shape", "ratio",
                                                      "ref_us", "port_us")} for r in worst]
    details["failed_variants"] = sorted(failed)
    critical = [f for f in findings if f.severity == "critical"]
    if critical:
        seen = [c for c, _ in classes]
        fc = next((c for c in ("kernel", "host", "env") if c in seen), seen[0])   # as gpu_test
        first = seen.index(fc)
        return Verdict(stage="bench", op=op, verdict="FAIL", owner=classes[first][1], fail_class=routed(fc),
                       attempt=attempt, summary=brief(critical[first].message), findings=findings,
                       details=details)
    if not ok and failed_test and failed_test.get("verdict") == "FAIL":
        fc = failed_test.get("fail_class")
        return Verdict(stage="bench", op=op, verdict="BLOCKED", owner=failed_test.get("owner") or fc or "kernel",
                       fail_class=fc, attempt=attempt,
                       summary=f"nothing to time: no variant passed the functional test (gpu_test FAIL: "
                               f"{failed_test.get('summary', '')})"[:600], details=details)
    if not ok and pending:
        return Verdict(stage="bench", op=op, verdict="NOT_RUN", attempt=attempt, findings=findings,
                       summary=(f"not_run (0 of {len(rows) + len(pending)} config(s) timed, {len(pending)} "
                                f"pending: python -m tileport.gpu.bench --op {op} --pending-only)"
                                + "".join(f"; {f.message}" for f in findings if f.severity == "warn"))[:600],
                       details=details)
    if not ok and odd:
        return Verdict(stage="bench", op=op, verdict="ERROR", owner="tool", fail_class=None,
                       attempt=attempt, findings=findings,
                       summary=f"no config to fold: the device time of {len(odd)} config(s) is implausible "
                               f"(details.implausible_configs): {odd[0]['kernel']}/{odd[0]['variant']} "
                               f"{odd[0]['shape']}: {odd[0]['error']}"[:600], details=details)
    if not ok and blocked:
        owners = sorted({blocked_owner(r) for r in blocked})
        return Verdict(stage="bench", op=op, verdict="BLOCKED", owner=owners[0] if len(owners) == 1 else "tool",
                       fail_class=None, attempt=attempt, findings=findings,
                       summary=(f"cutile 0.5.0 cannot launch any of the {len(blocked)} config(s): "
                                f"{blocked[0]['error']}" if owners == ["tool"] else
                                f"none of the {len(blocked)} config(s) can be timed: "
                                + "; ".join(f.message for f in findings if f.category == "launch"))[:600],
                       details=details)
    if not ok:         # the manifest's perf_shapes / fits: no writer or host builder can act
        return Verdict(stage="bench", op=op, verdict="BLOCKED", owner="manifest", fail_class=None,
                       attempt=attempt, summary="no perf shape fits any variant", details=details)
    g = details["geomean_ratio"]
    word = "DONE" if g >= threshold else "BELOW_THRESHOLD"
    tail = ""
    if loop is not None:
        und = f", {len(loop['undecided'])} within noise of it" if loop["undecided"] else ""
        tail = (f"; loop ratio {loop['geomean']:.3f} ({loop['verdict']} at {loop_threshold}, "
                f"{len(loop['below'])} config(s) below{und}; host time per call port "
                f"{loop['port_host_us']:.1f} µs, reference {loop['ref_host_us']:.1f} µs)")
    behind = details["ref_behind_torch"]
    if behind:
        tail += (f"; reference slower than torch in {len(behind)} of {len(ok)} config(s) "
                 f"(lowest {behind[0]['ref_vs_torch']:.2f}x: {behind[0]['variant']} {behind[0]['shape']})")
    if blocked:
        by_ref = sum(blocked_owner(r) == "manifest" for r in blocked)
        tail += (f"; {len(blocked)} config(s) BLOCKED ("
                 + ", ".join(x for x in (f"cutile 0.5.0 cannot launch {len(blocked) - by_ref}" if by_ref < len(blocked)
                                         else "", f"the cuTile Python reference cannot run {by_ref}" if by_ref
                                         else "") if x) + ": details.blocked_configs)")
    if odd:
        tail += (f"; {len(odd)} config(s) excluded, their device time under the hardware's floor (a measurement "
                 f"error: details.implausible_configs): "
                 + ", ".join(f"{r['kernel']}/{r['variant']} {r['shape']}" for r in odd[:3])
                 + (" ..." if len(odd) > 3 else ""))
    if torchless:
        tail += f"; torch not timed in {len(torchless)} config(s) (details.torch_not_timed)"
    if shown:
        tail += (f"; {len(shown)} config(s) miss the PyTorch semantics exactly as the reference does, a known "
                 f"defect of the kernel ({shown[0]['declared']}: details.known_defect_configs)")
    slowest = min(ok, key=lambda r: r["ratio"])["kernel"]     # a slow port: its writer must act
    return Verdict(stage="bench", op=op, verdict=word,
                   owner=None if word == "DONE" else owner_of("kernel", writers.get(slowest)),
                   attempt=attempt, findings=findings,
                   summary=f"geomean ratio {g:.3f} over {len(ok)}"
                           + (f" of {len(rows) + len(pending)} config(s), {len(pending)} pending" if pending
                              else " config(s)") + f" (threshold {threshold}); "
                           + (f"vs torch {details['geomean_vs_torch']:.3f}" if details["geomean_vs_torch"]
                              else "vs torch: not timed (torch launched no kernel)") + tail,
                   details=details)



def blocked_owner(row: dict) -> str:
    """Who acts on a BLOCKED config: ``manifest`` where the cuTile Python reference cannot run it
    (``blocked_side`` ``ref``: a perf shape the kernel does not run), ``env`` where the GPU lacks
    the device memory the config's arrays need (``blocked_side`` ``device``: another GPU, e.g. an
    H200's 141 GB for an H100's 80), else ``tool`` (cutile 0.5.0's limits,
    :func:`tileport.host.ffi.cutile_limit`)."""
    return {"ref": "manifest", "device": "env"}.get(row.get("blocked_side"), "tool")


def write_csv(rows: list[dict], path: str | Path) -> None:
    """bench.csv: :data:`COLUMNS`, floats with 4 significant decimals (µs, ratios)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})
    atomic_write_text(path, buf.getvalue())


#: the fields of a row kept in ``details.rows`` (besides :data:`COLUMNS`)
ROW_EXTRAS = ["samples", "loop_samples", "loop_design", "kernel_names", "error_class", "blocked", "restaged",
              "rtol", "atol", "port_matches_ref", "blocked_side", "out_bytes", "implausible", "remeasured",
              "torch_note"]
