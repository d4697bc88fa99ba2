"""Stage ``bench``: CUPTI device time of the cuTile Python reference, the Rust port and PyTorch.

Per perf config (kernel x variant x perf shape that fits), in one process -- the variants that
passed gpu_test (PASS, or REF_DEFECT: the port agrees with a reference whose defect the manifest
declares, :mod:`tileport.model.defects`), and those no test shape fits (shape constexprs set for a perf shape only: step 5
is then their only functional check; ``details.perf_only_variants``); a variant that failed its
functional test is not timed (``details.not_benchmarked``):

1. one untimed call per side (JIT compilation), then warm-up calls for ``warmup_ms``;
2. ``reps`` rounds sized from ``rep_ms`` (clamped to ``[min_reps, max_reps]``); each round
   calls ref, port, torch in turn -- interleaved, pair by pair -- each call preceded by an L2
   flush (``l2_flush_mib`` of memset, outside the measured range); the device time of a call is
   the sum of the CUPTI kernel durations it launched (:func:`tileport.gpu.cupti.profile`);
3. median and spread per side; ratio = ref median / port median (> 1: the port is faster),
   the median of the per-round paired ratios next to it; vs_torch = torch median / port median;
4. time per call in a loop, the other speed users feel (:func:`loop_times`): per loop, ``n``
   calls of one side enqueued back to back (no L2 flush), one synchronisation; loop time per
   call = (enqueue + drain) / n, host time per call = the enqueue alone / n (the CPU cost of a
   call while the device keeps up). ``n`` = ``loop_ms`` of device time (at least 3 calls, at
   most 200), the same for ref and port (from the shorter of the two), torch's and NVIDIA's
   from their own. The loops run in *cycles* of carry-over-balanced rounds
   (:func:`tileport.core.stats.balanced_rounds`: over a cycle every side runs right after every other
   side exactly once -- back to back, a loop inherits the clocks and heat its predecessor left,
   up to 10 % on a power-limited GEMM, and a plain rotation always put the port right after the
   reference); one untimed loop first, so that the first timed loop has its designed
   predecessor too. loop_ratio = the geomean over cycles of each cycle's ref / port ratio
   (geomeans of its loops) -- the loops of a pair are minutes apart at most, so slow clock drift
   cancels -- with its 95 % Student t interval over the cycles (``loop_ratio_lo``,
   ``loop_ratio_hi``; :func:`tileport.core.stats.loop_ratio_interval`). Adaptive: at least
   ``loop_min_cycles`` cycles, then more until the interval's half-width is at most
   ``loop_ci_width`` (relative), ``loop_max_cycles`` are timed or the next cycle would end past
   ``loop_max_s`` seconds of loop timing (a fixed-width sequential interval, Chow & Robbins
   1965, Ann. Math. Statist. 36:457). ``*_loop_us``: geomean of the side's loops (so
   loop_ratio = ref_loop_us / port_loop_us), ``*_host_us`` their median; host overhead per call
   = loop time - device time. ``python -m tileport.gpu.loopstudy docs/results/h200/ops`` gives the
   figures behind this design from published rows;
5. the outputs of the last timed ref and port calls are checked against the PyTorch semantics,
   each side on its own (``checked`` / ``port_mismatch`` for the port, ``ref_checked`` /
   ``ref_mismatch`` for the reference: a reference outside tolerance is a warning, as in gpu_test)
   (for an output whose first values the manifest gives -- ``init: {copy: ...}``, an array
   updated in place, or ``{full: 0.0}``, one a kernel accumulates into -- the outputs are first
   put back to those values and each kernel side called once more, untimed:
   :func:`tileport.gpu.harness.reset_sources`).

Where NVIDIA shipped a port of the kernel and it passed the functional test for the variant
(test.json ``details.nv``), it is a fourth side ``nv`` in every step: interleaved in the same rounds,
its own CUPTI device time, wall time per call and check (``nv_us``, ``nv_iqr_us``, ``nv_launches``,
``nv_loop_us``, ``nv_checked``); ``vs_nv`` = NVIDIA's median / the port's (> 1: the port is faster)
and ``ref_vs_nv`` = NVIDIA's / the reference's. A failing NVIDIA call drops that side for the config
(``nv_error``) and never fails the benchmark.

``results/<op>/bench.csv``: one row per config. ``results/<op>/bench.json``: DONE when the
operator's geomean ratio over its configs is >= ``threshold`` (config.yaml), else
BELOW_THRESHOLD; FAIL if a timed port call errs or its output is wrong; NOT_RUN without GPU.
The loop gate stands beside it (``details.loop``): the geomean loop ratio against
``loop_threshold``, and the configs under it. ``details.ref_behind_torch`` lists the configs
where the reference itself is slower than PyTorch (``ref_vs_torch`` < 1): the references
worth porting at all.

Run directly on a GPU node without Snakemake::

    python -m tileport.gpu.bench --op softmax [--results results] [--gpu auto|required|off]
        [--pending-only] [--budget-s S] [--configs KERNEL/VARIANT/SHAPE,...] [--configs-below-loop]

``--configs`` / ``--configs-below-loop`` time again only a selection of configs and keep every
other still-valid row (:func:`run`): a re-timed row keeps its old ``loop_ratio_prev``, every new
row its ``timed_at``, ``details.retimed`` says which configs a run re-timed and when. Re-timing
only the configs that measured low favours passing (regression to the mean): read all of a
selection's before/after pairs.
"""
from __future__ import annotations

import argparse
import csv
import io
import math
import signal
import sys
import time
from pathlib import Path

from tileport.core import provenance, stats
from tileport.core.verdict import (
    TEST_PASSED,
    VARIANT_PASSED,
    Finding,
    Verdict,
    VerdictError,
    atomic_write_text,
    brief,
    read,
    write,
)
from tileport.gpu import harness
from tileport.gpu import kept as tp_kept
from tileport.gpu.test import (
    KEEP,
    MEASURED,
    OpContext,
    _hashes_match,
    failure_class,
    gpu_gate,
    input_error,
    library_for,
    owner_of,
    port_writers,
    routed,
    snapshot,
)
from tileport.host import shim as host_shim
from tileport.model import manifest
from tileport.model.manifest import declared_defects

REPO = Path(__file__).resolve().parents[2]

DEFAULTS = {"threshold": 0.95, "warmup_ms": 20, "rep_ms": 150, "min_reps": 10, "max_reps": 100,
            "l2_flush_mib": 256, "seed": 0, "loop_threshold": 0.97, "loop_ms": 20, "loop_min_cycles": 3,
            "loop_max_cycles": 30, "loop_ci_width": 0.01, "loop_max_s": 3.0}
#: calls per loop: loop_ms / device time per call, clamped here (CUDA's launch queue holds about
#: a thousand launches; beyond it a launch blocks and host time would include waiting; at 3 calls
#: of a long kernel the first call's enqueue is well under 1 % of the loop)
LOOP_MIN_CALLS, LOOP_MAX_CALLS = 3, 200

COLUMNS = ["op", "kernel", "variant", "shape", "grid", "reps", "ref_us", "port_us", "torch_us",
           "ref_iqr_us", "port_iqr_us", "torch_iqr_us", "ratio", "paired_ratio", "vs_torch",
           "ref_vs_torch", "ref_launches", "port_launches", "torch_launches",
           "ref_loop_us", "port_loop_us", "torch_loop_us", "loop_ratio", "loop_calls",
           "ref_host_us", "port_host_us", "torch_host_us",
           "port_host_overhead_us", "ref_host_overhead_us", "checked", "ref_checked",
           "port_mismatch", "ref_mismatch", "error",
           "nv_us", "nv_iqr_us", "vs_nv", "ref_vs_nv", "nv_launches", "nv_loop_us", "nv_checked",
           "nv_error", "loop_ratio_lo", "loop_ratio_hi", "loop_cycles", "loop_ratio_prev", "timed_at"]
#: the per-side columns of NVIDIA's port (empty when it is not a side of the config)
NV_COLUMNS = COLUMNS[COLUMNS.index("nv_us"):COLUMNS.index("nv_error") + 1]


def rotation(labels: list[str], r: int) -> list[str]:
    """The sides' order in round ``r``: ``labels`` rotated left by ``r`` (so over len(labels)
    consecutive rounds every side runs once in every position). :mod:`tileport.gpu.hostbench`'s
    order; the loop timing here balances carry-over instead (:func:`tileport.core.stats.balanced_rounds`:
    in a rotation each side always follows the same other side)."""
    k = r % len(labels)
    return labels[k:] + labels[:k]


def loop_calls(device_us: float, loop_ms: float) -> int:
    """Calls per timed loop: ``loop_ms`` of device time at ``device_us`` per call, clamped to
    [:data:`LOOP_MIN_CALLS`, :data:`LOOP_MAX_CALLS`]."""
    n = int(loop_ms * 1e3 / max(device_us, 1e-3))
    return max(LOOP_MIN_CALLS, min(LOOP_MAX_CALLS, n))


def loop_times(sides: list[tuple[str, callable]], n, sync, clock=time.perf_counter, *,
               pair: tuple[str, str] = ("ref", "port"), min_cycles: int = DEFAULTS["loop_min_cycles"],
               max_cycles: int = DEFAULTS["loop_max_cycles"], width: float = DEFAULTS["loop_ci_width"],
               max_s: float = DEFAULTS["loop_max_s"]) -> dict:
    """Time loops of back-to-back calls in carry-over-balanced cycles until the loop ratio of
    ``pair`` is known to ``width`` (module doc, step 4).

    ``sides``: (label, call), at least the two of ``pair``; ``n``: calls per loop, an int or
    ``{label: int}``; ``sync``: blocks until the device is idle (``torch.cuda.synchronize``);
    ``clock``: seconds. One untimed loop of the cycle's last side, then cycles of
    :func:`tileport.core.stats.balanced_rounds`; each loop starts after a ``sync`` and ends with one.
    After ``min_cycles`` cycles it stops as soon as the 95 % interval of the ratio
    (:func:`tileport.core.stats.loop_ratio_interval`) has a half-width <= ``width`` (relative:
    sqrt(hi / lo) - 1), at ``max_cycles``, or when one more cycle (as long as the last) would end
    past ``max_s`` seconds after the first loop started.

    Returns ``{label: {"loop_us": [...], "host_us": [...]}}`` (µs per call, every timed loop in
    time order), ``"order"`` (the timed rounds, each a list of labels), ``"warmup"`` (the label
    of the untimed loop), ``"per_cycle"`` (loops per side in a cycle), ``"cycles"``,
    ``"interval"`` (:func:`tileport.core.stats.loop_ratio_interval` of ``pair``), ``"stop"``
    (``width``, ``max_cycles`` or ``max_s``), ``"n"`` (calls per loop by label).

    Raises:
        ValueError: a count < 1, ``min_cycles`` > ``max_cycles``, ``max_cycles`` above what the
            interval supports (31), or ``pair`` not among the sides.
    """
    labels = [label for label, _ in sides]
    ns = {label: (n[label] if isinstance(n, dict) else n) for label in labels}
    if min(ns.values()) < 1 or not 1 <= min_cycles <= max_cycles or max_cycles > len(stats.T975) + 1:
        raise ValueError(f"loop_times: calls {ns}, cycles {min_cycles}..{max_cycles} (1 <= min <= max <= "
                         f"{len(stats.T975) + 1})")
    if not set(pair) <= set(labels):
        raise ValueError(f"loop_times: {pair} not among the sides {labels}")
    fns = dict(sides)
    rounds = stats.balanced_rounds(labels)
    out: dict = {label: {"loop_us": [], "host_us": []} for label in labels}
    out.update(order=[], warmup=rounds[-1][-1], per_cycle=len(rounds), n=ns)

    def one(label: str) -> tuple[float, float]:
        fn, k = fns[label], ns[label]
        sync()
        t0 = clock()
        for _ in range(k):
            fn()
        t1 = clock()
        sync()
        t2 = clock()
        return (t2 - t0) * 1e6 / k, (t1 - t0) * 1e6 / k

    one(out["warmup"])          # the first timed loop follows its designed predecessor
    start = clock()
    while True:
        c0 = clock()
        for rnd in rounds:
            out["order"].append(list(rnd))
            for label in rnd:
                loop_us, host_us = one(label)
                out[label]["loop_us"].append(loop_us)
                out[label]["host_us"].append(host_us)
        cycles = len(out["order"]) // len(rounds)
        now = clock()
        if cycles < min_cycles:
            continue
        iv = stats.loop_ratio_interval(out[pair[0]]["loop_us"], out[pair[1]]["loop_us"], len(rounds))
        out.update(cycles=cycles, interval=iv)
        if math.sqrt(iv["hi"] / iv["lo"]) - 1 <= width:
            out["stop"] = "width"
        elif cycles >= max_cycles:
            out["stop"] = "max_cycles"
        elif now - start + (now - c0) > max_s:
            out["stop"] = "max_s"
        else:
            continue
        return out


class SideFailed(Exception):
    """One side's first (untimed) call of a config failed (:func:`first_calls`): ``side``
    (``ref``, ``port``, ``torch``) and the exception ``exc`` it raised."""

    def __init__(self, side: str, exc: BaseException):
        super().__init__(f"{SIDE_WORDS.get(side, side)}: {type(exc).__name__}: {exc}")
        self.side, self.exc = side, exc


#: how a row's error names the side that raised it
SIDE_WORDS = {"ref": "the cuTile Python reference", "port": "the port", "torch": "PyTorch", "nv": "NVIDIA's port"}


def first_calls(sides: list, sync) -> None:
    """Each side's first call (JIT compile, cuBLAS heuristics; untimed), synchronised one by one
    so that a failure names its side.

    Raises:
        SideFailed: the first side whose call (or the synchronisation after it) raised.
    """
    for label, fn in sides:
        try:
            fn()
            sync()
        except Exception as exc:  # noqa: BLE001 - re-raised with its side
            raise SideFailed(label, exc) from exc


def error_class(exc: BaseException) -> str:
    """Routing class of a config's failure (:func:`tileport.gpu.test.failure_class` for the
    port's side): the cuTile Python reference failing at a perf shape is the manifest's (a
    config the kernel does not run: no writer or host builder can act), PyTorch's the
    environment's."""
    if isinstance(exc, SideFailed) and exc.side != "port":
        return "manifest" if exc.side == "ref" else "env"
    return failure_class(exc.exc if isinstance(exc, SideFailed) else exc, "port")


def measure(c, cfg: dict, tol: dict) -> dict:
    """Benchmark one :class:`tileport.gpu.harness.Call` (steps 1-5 of the module doc). Returns a row
    of :data:`COLUMNS` (numbers in µs) plus ``samples`` (per-round device µs per side),
    ``loop_samples`` (per side, the loop time per call of every timed loop, µs, in time order) and
    ``loop_design`` (:func:`loop_times`' ``order``, ``warmup``, ``per_cycle``, calls per loop by side
    and why it stopped)."""
    import torch

    from tileport.gpu import cupti

    sides = [("ref", c.ref), ("port", c.port), ("torch", c.torch)]
    first_calls(sides, torch.cuda.synchronize)      # JIT compile / cuBLAS heuristics, untimed
    nv_error = c.nv_note if c.nv is None else ""
    if c.nv is not None:                    # NVIDIA's port: a side only if its first call works
        try:
            c.nv()
            torch.cuda.synchronize()
            sides.append(("nv", c.nv))
        except Exception as exc:  # noqa: BLE001 - NVIDIA's failure is a note of its own
            nv_error = f"{type(exc).__name__}: {exc}"[:600]
    est = {}
    for label, fn in sides:
        n, t0 = 0, time.perf_counter()
        while n < 3 or (time.perf_counter() - t0) * 1e3 < cfg["warmup_ms"]:
            fn()
            torch.cuda.synchronize()
            n += 1
        est[label] = (time.perf_counter() - t0) * 1e6 / n
    flush_buf = torch.empty(int(cfg["l2_flush_mib"]) << 20, dtype=torch.uint8, device="cuda")
    reps = stats.reps_for(max(est.values()), cfg["rep_ms"], cfg["min_reps"], cfg["max_reps"])
    prof = cupti.profile(sides, reps, flush=flush_buf.zero_)
    dev = prof["device_us"]
    row = {"op": c.op, "kernel": c.kernel, "variant": c.variant.id,
           "shape": "x".join(map(str, c.shape)), "grid": "x".join(map(str, c.grid)), "reps": reps}
    labels = [label for label, _ in sides]
    for s in labels:
        row[f"{s}_us"] = stats.median(dev[s])
        row[f"{s}_iqr_us"] = stats.spread(dev[s])["iqr"]
        ls = sorted(set(prof["launches"][s]))
        row[f"{s}_launches"] = ls[0] if len(ls) == 1 else "/".join(map(str, ls))
    row["ratio"] = row["ref_us"] / row["port_us"]
    row["paired_ratio"] = stats.median(stats.paired_ratios(dev["ref"], dev["port"]))
    row["vs_torch"] = row["torch_us"] / row["port_us"]
    row["ref_vs_torch"] = row["torch_us"] / row["ref_us"]
    del flush_buf
    n = loop_calls(min(row["ref_us"], row["port_us"]), cfg["loop_ms"])     # ref and port alike
    ns = {s: n if s in ("ref", "port") else loop_calls(row[f"{s}_us"], cfg["loop_ms"]) for s in labels}
    loops = loop_times(sides, ns, torch.cuda.synchronize, min_cycles=int(cfg["loop_min_cycles"]),
                       max_cycles=int(cfg["loop_max_cycles"]), width=float(cfg["loop_ci_width"]),
                       max_s=float(cfg["loop_max_s"]))
    row["loop_calls"] = n
    for s in ("ref", "port", "torch"):
        row[f"{s}_loop_us"] = stats.geomean(loops[s]["loop_us"])
        row[f"{s}_host_us"] = stats.median(loops[s]["host_us"])
    iv = loops["interval"]
    row["loop_ratio"], row["loop_ratio_lo"], row["loop_ratio_hi"] = iv["ratio"], iv["lo"], iv["hi"]
    row["loop_cycles"] = iv["cycles"]
    row["ref_host_overhead_us"] = max(0.0, row["ref_loop_us"] - row["ref_us"])
    row["port_host_overhead_us"] = max(0.0, row["port_loop_us"] - row["port_us"])
    if c.in_place:          # outputs with given first values: check one call on those values
        c.reset()
        for label, fn in sides:
            if label != "torch":
                fn()
        torch.cuda.synchronize()
    expected = c.expected()
    for side, col in (("port", "checked"), ("ref", "ref_checked")):
        bad = [r for r in (harness.compare(a, e, tol["rtol"], tol["atol"])
                           for a, e in zip(c.outputs[side], expected)) if not r["ok"]]
        row[col] = "ok" if not bad else "MISMATCH"
        row[f"{side}_mismatch"] = harness.mismatch_text(bad[0], side) if bad else ""
    if row["checked"] == row["ref_checked"] == "MISMATCH":
        # both miss: the same way (the port within tolerance of the reference kernel, NaN where it
        # has NaN) makes it the manifest's, as gpu_test.same_miss (fold)
        row["port_matches_ref"] = all(harness.compare(a, b, tol["rtol"], tol["atol"])["ok"]
                                      for a, b in zip(c.outputs["port"], c.outputs["ref"]))
    row["error"] = ""
    row["nv_error"] = nv_error
    if "nv" in labels:
        row["vs_nv"] = row["nv_us"] / row["port_us"]
        row["ref_vs_nv"] = row["nv_us"] / row["ref_us"]
        row["nv_loop_us"] = stats.geomean(loops["nv"]["loop_us"])
        row["nv_checked"] = "ok" if all(harness.compare(a, e, tol["rtol"], tol["atol"])["ok"]
                                        for a, e in zip(c.outputs["nv"], expected)) else "MISMATCH"
    row["samples"] = {s: dev[s] for s in labels}
    row["loop_samples"] = {s: loops[s]["loop_us"] for s in labels}
    row["loop_design"] = {"order": loops["order"], "warmup": loops["warmup"], "per_cycle": loops["per_cycle"],
                          "calls": loops["n"], "stop": loops["stop"]}
    row["kernel_names"] = {s: sorted({n for k in prof["kernels"][s] for n, _ in k}) for s in labels}
    return row


def loop_class(row: dict, loop_threshold: float) -> str | None:
    """One config's side of the loop gate (the one definition :func:`loop_gate`, the summary and
    the report use): None when ``row`` has no loop time (``loop_ratio`` not a number), ``pass``
    when ``loop_ratio`` >= ``loop_threshold`` (config.yaml ``bench.loop_threshold``), ``below``
    when it is under it and its 95 % interval says so (``loop_ratio_hi`` < threshold; a row
    without an interval, timed before the benchmark had one, by its loop ratio alone), else
    ``undecided`` (under it, the interval reaching it: within the measurement's noise)."""
    ratio = row.get("loop_ratio")
    if not isinstance(ratio, (int, float)):
        return None
    if ratio >= loop_threshold:
        return "pass"
    hi = row.get("loop_ratio_hi")
    return "below" if not isinstance(hi, (int, float)) or hi < loop_threshold else "undecided"


def loop_gate(rows: list[dict], loop_threshold: float) -> dict | None:
    """The loop gate over the rows that carry a loop time (None when none does): ``geomean``
    of ``loop_ratio``, ``threshold``, ``verdict`` DONE / BELOW_THRESHOLD (the geomean against
    the threshold), ``below`` (every config whose loop ratio is under the threshold and whose
    95 % interval says so, ``loop_ratio_hi`` < threshold -- a row without an interval, timed
    before the benchmark had one, by its loop ratio alone -- lowest first, with its loop and host
    times per call), ``undecided`` (loop ratio under the threshold, interval reaching it: the
    measurement cannot tell; the same fields): per config :func:`loop_class`;
    ``port_host_us`` / ``ref_host_us`` (medians over the configs of the host time per call, µs)."""
    timed = [r for r in rows if isinstance(r.get("loop_ratio"), (int, float))]
    if not timed:
        return None
    g = stats.geomean([r["loop_ratio"] for r in timed])
    under = sorted((r for r in timed if r["loop_ratio"] < loop_threshold), key=lambda r: r["loop_ratio"])
    keys = ("kernel", "variant", "shape", "loop_ratio", "loop_ratio_lo", "loop_ratio_hi", "ref_loop_us",
            "port_loop_us", "ref_host_us", "port_host_us", "ref_us", "port_us")
    return {"geomean": g, "threshold": loop_threshold, "configs": len(timed),
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

    Whose fault: a row with ``blocked`` (a config cutile 0.5.0 cannot launch:
    :func:`tileport.host.ffi.cutile_limit`) is a warning, owner ``tool``, listed in
    ``details.blocked_configs``, and the other configs are judged without it (BLOCKED, owner
    ``tool``, when it leaves none); a row's ``error`` has the routing class ``error_class``
    (:func:`tileport.gpu.test.failure_class`: ``host`` for a shim's refusal) and the owner
    :func:`tileport.gpu.test.owner_of` gives it (``writers``: kernel -> backend; a wrong or slow
    port the translator wrote is ``tool``).

    Geomeans over the configs that ran: ``ratio`` (ref/port), ``vs_torch`` (torch/port),
    ``ref_vs_torch`` (torch/ref); per ``kernel/variant`` the same over its configs plus the
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
    from tileport.model.defects import covering

    writers = writers or {}
    cover = covering(list(defects or []))
    shown = []              # configs whose timed outputs show a declared defect of the kernel
    ok = [r for r in rows if not r.get("error")]
    blocked = [r for r in rows if r.get("error") and r.get("blocked")]
    errs = [r for r in rows if r.get("error") and not r.get("blocked")]
    classes = []            # (routing class, owner) of every critical finding, in order
    failed = set()          # kernel/variant keys with a critical finding
    findings = []
    for r in errs:
        fc = r.get("error_class") or "kernel"
        findings.append(Finding("launch", "critical", owner_of(fc, writers.get(r["kernel"])),
                                f"{r['kernel']}/{r['variant']} {r['shape']}: {r['error']}"))
        classes.append((fc, findings[-1].owner))
        failed.add(f"{r['kernel']}/{r['variant']}")
    for r in ok:
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
    findings += [Finding("launch", "warn", "tool",
                         f"{r['kernel']}/{r['variant']} {r['shape']}: BLOCKED: cutile 0.5.0 cannot launch "
                         f"this config: {r['error']} (evidence: {r['blocked']})"[:1500]) for r in blocked]
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
        variants[key] = {"configs": len(rs),
                         "ratio": stats.geomean([r["ratio"] for r in rs]),
                         "vs_torch": stats.geomean([r["vs_torch"] for r in rs]),
                         "ref_us": stats.geomean([r["ref_us"] for r in rs]),
                         "port_us": stats.geomean([r["port_us"] for r in rs]),
                         "torch_us": stats.geomean([r["torch_us"] for r in rs]),
                         "ref_vs_torch": stats.geomean([r["ref_vs_torch"] for r in rs])}
        if all(isinstance(r.get("loop_ratio"), (int, float)) for r in rs):
            variants[key]["loop_ratio"] = stats.geomean([r["loop_ratio"] for r in rs])
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
                                       "owner": "tool", "error": r["error"], "evidence": r["blocked"]}
                                      for r in blocked]
    loop = loop_gate(ok, loop_threshold)
    if loop is not None:
        details["loop"] = loop
    details["ref_behind_torch"] = [
        {k: r[k] for k in ("kernel", "variant", "shape", "ref_vs_torch", "ref_us", "torch_us")}
        for r in sorted(ok, key=lambda r: r["ref_vs_torch"]) if r["ref_vs_torch"] < 1.0]
    if ok:
        details["geomean_ratio"] = stats.geomean([r["ratio"] for r in ok])
        details["geomean_vs_torch"] = stats.geomean([r["vs_torch"] for r in ok])
        details["geomean_ref_vs_torch"] = stats.geomean([r["ref_vs_torch"] for r in ok])
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
                       summary=f"not_run (0 of {len(rows) + len(pending)} config(s) timed, "
                               f"{len(pending)} pending: python -m tileport.gpu.bench --op {op} --pending-only)",
                       details=details)
    if not ok and blocked:
        return Verdict(stage="bench", op=op, verdict="BLOCKED", owner="tool", fail_class=None,
                       attempt=attempt, findings=findings,
                       summary=f"cutile 0.5.0 cannot launch any of the {len(blocked)} config(s): "
                               f"{blocked[0]['error']}"[:600], details=details)
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
        tail += f"; {len(blocked)} config(s) BLOCKED (cutile 0.5.0 cannot launch them: details.blocked_configs)"
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
                           f"vs torch {details['geomean_vs_torch']:.3f}" + tail,
                   details=details)


def write_csv(rows: list[dict], path: str | Path) -> None:
    """bench.csv: :data:`COLUMNS`, floats with 4 significant decimals (µs, ratios)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})
    atomic_write_text(path, buf.getvalue())


#: the fields of a row kept in ``details.rows`` (besides :data:`COLUMNS`)
ROW_EXTRAS = ["samples", "loop_samples", "loop_design", "kernel_names", "error_class", "blocked", "restaged", "rtol", "atol",
              "port_matches_ref"]


def perf_configs(man: dict) -> dict[tuple[str, str, str], dict]:
    """The manifest's perf configs in manifest order: (kernel, variant id, shape ``AxB``) ->
    ``{"rtol", "atol"}`` of the call (:func:`tileport.gpu.harness.cases` kind ``perf``,
    :func:`tileport.gpu.harness.tolerance`). Raises what those raise for a bad manifest."""
    return {tp_kept.config_key(k, v.id, s): harness.tolerance(man, v, s) for k, v, s in harness.cases(man, "perf")}


def reconcile(doc: dict, op_dir: str | Path, sources_sha: str | None, man: dict | None = None,
              writers: dict | None = None, test: dict | None = None) -> dict | None:
    """A kept bench verdict as it stands against the operator's inputs now (pure but for
    reading the manifest: no GPU).

    None when ``doc`` is no measurement (not DONE / BELOW_THRESHOLD / FAIL) or measured other
    sources (``details.sources_sha`` != ``sources_sha``; None skips that check) or other
    test-relevant inputs (:func:`tileport.gpu.kept.inputs_match`). Otherwise the verdict
    re-folded (:func:`fold`, the doc's own threshold and loop threshold) over its rows that are
    still valid (:func:`tileport.gpu.kept.split_rows`: still a perf config, same tolerance, no
    launch error), with every perf config of a benchmarked variant that no valid row covers as
    pending; the doc's ``not_benchmarked``, ``perf_only_variants``, ``provenance`` and hashes are
    carried over (``details.retired_rows``: rows dropped). ``man``: the loaded manifest (default:
    ``op_dir/manifest.yaml``); ``test``: the operator's test.json, for a verdict with nothing timed."""
    if not isinstance(doc, dict) or doc.get("verdict") not in ("DONE", "BELOW_THRESHOLD", "FAIL"):
        return None
    d = doc.get("details") if isinstance(doc.get("details"), dict) else {}
    if sources_sha is not None and d.get("sources_sha") != sources_sha:
        return None
    if not tp_kept.inputs_match(d, op_dir):
        return None
    man = man if man is not None else manifest.load(Path(op_dir) / "manifest.yaml")
    perf = perf_configs(man)
    rows = d.get("rows") or []
    valid, retired = tp_kept.split_rows(list(rows) if isinstance(rows, list) else rows, perf)
    skipped = set(d.get("not_benchmarked") or {})
    have = {tp_kept.config_key(r["kernel"], r["variant"], r["shape"]) for r in valid}
    pending = [{"kernel": k, "variant": v, "shape": sh} for (k, v, sh) in perf
               if f"{k}/{v}" not in skipped and (k, v, sh) not in have]
    loop_thr = (d.get("loop") or {}).get("threshold", DEFAULTS["loop_threshold"])
    v = fold(doc["op"], valid, float(d.get("threshold", DEFAULTS["threshold"])), doc.get("attempt", 1),
             d.get("env"), d.get("seconds", 0.0), failed_test=test if skipped else None,
             loop_threshold=float(loop_thr), writers=writers, pending=pending, defects=declared_defects(man))
    v.details["rows"] = valid
    for key in ("not_benchmarked", "perf_only_variants", "sources_sha", "inputs_sha", "test_inputs_sha",
                "provenance", "retimed"):
        if key in d:
            v.details[key] = d[key]
    if not d.get("test_inputs_sha"):            # an old verdict, recognised: name what it holds for
        from tileport.gpu.kept import tested_inputs_sha

        v.details["test_inputs_sha"] = tested_inputs_sha(op_dir)
    v.details["retired_rows"] = len(retired)
    v.artifacts = dict(doc.get("artifacts") or {})
    return v.to_dict()


def kept_bench(results: Path, op: str, op_dir: Path, out_json: str | Path) -> tuple[dict | None, Path | None]:
    """The operator's kept bench verdict that still holds, reconciled (:func:`reconcile`), and
    the file it came from: ``out_json`` if it is one, else ``results/<op>/.measured/bench.json``
    (Snakemake removes a job's outputs before it runs); ``(None, None)`` when neither holds."""
    for src in (Path(out_json), results / op / KEEP / "bench.json"):
        try:
            doc = read(src)
        except VerdictError:
            continue
        if doc["verdict"] in MEASURED and _hashes_match(doc, results, op, op_dir):
            try:
                r = reconcile(doc, op_dir, None, writers=port_writers(results, op), test=_test_doc(results, op))
            except (harness.HarnessError, manifest.ManifestError):
                return None, None
            if r is not None:
                return r, src
    return None, None


def other_device(doc: dict | None, env: dict) -> str | None:
    """The device a kept bench verdict ``doc`` was measured on (``details.env.device``, else
    ``details.provenance.gpu.name``) when it is not this run's (``env["device"]``,
    :func:`tileport.gpu.harness.env_versions`); None when they are the same or either is unknown.
    ``--pending-only`` then times every config: its merged verdict carries one ``env`` and one
    ``provenance``, and its geomeans are over rows of one device."""
    d = (doc or {}).get("details") or {}
    was = (d.get("env") or {}).get("device") or (((d.get("provenance") or {}).get("gpu") or {}).get("name"))
    now = (env or {}).get("device")
    return was if was and now and was != now else None


def kept_rows(results: Path, op: str, op_dir: Path, out_json: str | Path,
              env: dict) -> tuple[dict, Path | None, str | None]:
    """The rows of the kept bench verdict (:func:`kept_bench`) by config key
    (:func:`tileport.gpu.kept.config_key`), the file they come from, and the device they were
    measured on when it is not this run's (:func:`other_device`; then no rows: a merge would mix
    devices). ``({}, None, None)`` when no kept verdict still holds."""
    doc, src = kept_bench(results, op, op_dir, out_json)
    other = other_device(doc, env)
    if doc is None or other:
        return {}, (src if other else None), other
    return ({tp_kept.config_key(r["kernel"], r["variant"], r["shape"]): r
             for r in doc.get("details", {}).get("rows", [])}, src, None)


def _test_doc(results: Path, op: str) -> dict | None:
    try:
        return read(results / op / "test.json")
    except VerdictError:
        return None


def restore_bench(results: Path, op: str, op_dir: Path, out_json: str | Path, out_csv: str | Path) -> dict | None:
    """Without a GPU: the kept bench verdict that still holds (:func:`kept_bench`), written to
    ``out_json`` and ``out_csv`` as it stands now (its valid rows, the configs added since as
    pending); None when none holds (the caller writes NOT_RUN)."""
    import shutil

    doc, src = kept_bench(results, op, op_dir, out_json)
    if doc is None:
        return None
    csv_src = src.parent / "bench.csv"
    if (not doc["details"]["configs_pending"] and not doc["details"]["retired_rows"] and csv_src.exists()
            and src != Path(out_json)):
        # nothing changed for it: the measurement comes back byte for byte
        Path(out_json).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out_json)
        shutil.copyfile(csv_src, out_csv)
        d = read(out_json)
    else:
        write_csv(doc["details"]["rows"], out_csv)
        d = write(doc, out_json)
    print(f"tileport: no GPU here: kept measurement {src} restored ({doc['details']['configs']} config(s) "
          f"valid, {doc['details']['configs_pending']} pending)")
    return d


class SelectionError(ValueError):
    """A selection of configs to time again (``--configs``, ``--configs-below-loop``) that this
    run cannot honour without mixing measurements (:func:`run`)."""


def selected(key: tuple[str, str, str], patterns: list[str]) -> bool:
    """Whether a config (:func:`tileport.gpu.kept.config_key`) matches one of ``patterns``, each
    ``KERNEL/VARIANT/SHAPE`` with shell wildcards per part (``fnmatch``, case-sensitive; ``*``
    for a whole part). Raises ValueError for a pattern without exactly three parts."""
    from fnmatch import fnmatchcase

    return any(all(fnmatchcase(k, q) for k, q in zip(key, p.split("/"))) for p in config_patterns(patterns))


def config_patterns(patterns) -> list[str]:
    """``--configs``: a comma-separated string or a list of ``KERNEL/VARIANT/SHAPE`` patterns,
    as a list. Raises ValueError for none, or one without exactly three non-empty parts."""
    ps = [p.strip() for p in (patterns.split(",") if isinstance(patterns, str) else patterns) if p.strip()]
    bad = [p for p in ps if len(p.split("/")) != 3 or not all(p.split("/"))]
    if not ps or bad:
        raise ValueError(f"--configs {bad or patterns!r}: want KERNEL/VARIANT/SHAPE[,...] (shell wildcards "
                         f"per part, e.g. '_matmul_kernel/f32-*/8192x8192x8192')")
    return ps


#: why a re-timed selection needs reading with care (``details.retimed``)
REGRESSION_NOTE = ("only configs selected for timing again were re-timed: selecting those that measured low "
                   "favours passing (regression to the mean); compare loop_ratio_prev with loop_ratio over all "
                   "of them, not the passes alone")


def retimed_record(fresh: list[dict], retime: dict, patterns: list[str] | None, below_loop: bool,
                   loop_threshold: float) -> dict:
    """One entry of ``details.retimed``: when (UTC), what was selected, and per config timed by
    this run its loop ratio before (``loop_ratio_prev``, None for a config no kept row covered)
    and now. ``fresh``: the rows this run timed; ``retime``: config key -> the kept row replaced."""
    from datetime import datetime, timezone

    return {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "selection": {"configs": list(patterns or []), "below_loop": below_loop,
                          "loop_threshold": loop_threshold},
            "configs": [{"kernel": r["kernel"], "variant": r["variant"], "shape": r["shape"],
                         "loop_ratio_prev": (retime.get(tp_kept.config_key(r["kernel"], r["variant"], r["shape"]))
                                             or {}).get("loop_ratio"),
                         "loop_ratio": r.get("loop_ratio"), "error": r.get("error") or ""} for r in fresh],
            "note": REGRESSION_NOTE}


def budget_seconds(value) -> float:
    """``--budget-s``: a number of seconds >= 0 (0 times nothing; ``inf`` sets no limit).

    Raises:
        ValueError: not a number, NaN (every comparison with it is false: the loop would never
            stop) or negative."""
    try:
        s = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"--budget-s {value}: not a number of seconds") from None
    if math.isnan(s) or s < 0:
        raise ValueError(f"--budget-s {value}: the time budget must be a number of seconds >= 0 "
                         f"(inf for no limit)")
    return s


class Stopped(BaseException):
    """Raised in the timing loop by the SIGTERM handler :func:`run` installs around it (a
    scheduler's time limit, ``timeout``): the loop stops, what was timed is written. A
    BaseException, so a config's own ``except Exception`` does not turn it into its error row."""


def _stop_on_sigterm(signum, frame):
    raise Stopped("SIGTERM during the timing loop")


def _trap_sigterm():
    """Install :func:`_stop_on_sigterm` for SIGTERM (main thread only: elsewhere Python cannot);
    returns the previous handler to put back, or None."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _stop_on_sigterm)


def _one_config(ctx, op: str, kernel: str, variant, shape: tuple, cfg: dict, tols: dict,
                nv_passed: set) -> tuple[dict, bool]:
    """Time one perf config (:func:`measure`) and print its line. Returns its bench.csv row and
    whether the CUDA context was lost (later configs cannot run). A failure of the config is its
    row (``error``, ``error_class``; ``blocked`` where cutile 0.5.0 cannot launch it), not an
    exception; :class:`Stopped` passes through."""
    from datetime import datetime, timezone

    base = {"op": op, "kernel": kernel, "variant": variant.id, "shape": "x".join(map(str, shape)),
            "timed_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}   # the row's own date
    try:
        key = f"{kernel}/{variant.id}"
        c = ctx.call(kernel, variant, shape, cfg["seed"], nv=key in nv_passed)
        if kernel in ctx.nv and key not in nv_passed and c.nv is None and not c.nv_note:
            c.nv_note = "NVIDIA's port did not pass the functional test for this variant"
        row = {**measure(c, cfg, tols[kernel, variant.id, shape]), **tols[kernel, variant.id, shape],
               "timed_at": base["timed_at"]}
        shim = ctx.lib.shims.get(c.symbol)
        if shim is not None and shim.restaged:   # host copies timed with the port (ffi.restage_strides)
            row["restaged"] = dict(shim.restaged)
            shim.restaged.clear()
        del c
    except Exception as exc:  # noqa: BLE001 - one config's failure is a row, not a crash
        from tileport.host.ffi import cutile_limit

        inner = exc.exc if isinstance(exc, SideFailed) else exc
        row = {**base, "error": (str(exc) if isinstance(exc, SideFailed)
                                 else f"{type(exc).__name__}: {exc}")[:600],
               "error_class": error_class(exc)}
        if (not isinstance(exc, SideFailed) or exc.side == "port") and cutile_limit(inner):
            row["blocked"] = cutile_limit(inner)
            print(f"{kernel}/{variant.id} {base['shape']}: BLOCKED (cutile 0.5.0 cannot launch it): "
                  f"{row['error']}", flush=True)
        return row, "CUDA" in str(exc)
    nv = f", NVIDIA {row['nv_us']:.1f} us" if isinstance(row.get("nv_us"), float) else ""
    print(f"{kernel}/{variant.id} {row['shape']}: ref {row['ref_us']:.1f} us, port "
          f"{row['port_us']:.1f} us, torch {row['torch_us']:.1f} us{nv}, ratio {row['ratio']:.3f}; "
          f"loop ref {row['ref_loop_us']:.1f} / port {row['port_loop_us']:.1f} / torch "
          f"{row['torch_loop_us']:.1f} us per call, loop ratio {row['loop_ratio']:.3f} "
          f"[{row['loop_ratio_lo']:.3f}, {row['loop_ratio_hi']:.3f}] over {row['loop_cycles']} cycles, host "
          f"ref {row['ref_host_us']:.1f} / port {row['port_host_us']:.1f} us; ref vs torch "
          f"{row['ref_vs_torch']:.2f}", flush=True)
    return row, False


def run(op: str, op_dir: str | Path, results: str | Path, out_csv: str | Path,
        out_json: str | Path, gpu: str = "auto", cfg: dict | None = None,
        host_build: str | Path | None = None, attempt: int = 1,
        nv_build: str | Path | None = None, pending_only: bool = False,
        budget_s: float | None = None, configs: list[str] | None = None,
        below_loop: bool = False) -> dict:
    """Stage entry point (see module doc). Returns the verdict written to ``out_json``.
    ``nv_build``: NVIDIA's build verdict (default ``<results>/nvidia/shipped/build.json``).
    ``pending_only``: time only the perf configs that no kept row still valid covers
    (:func:`kept_bench`: ``out_json`` or the ``.measured`` copy, :func:`reconcile`) and write
    them merged with the kept rows (bench.json and bench.csv in manifest order; geomeans over all
    valid rows); with no valid kept verdict, or one measured on another device
    (:func:`other_device`), it times every config. ``budget_s``: wall seconds for the timing
    loop (:func:`budget_seconds`; None: no limit). A loop stopped by the budget or SIGTERM
    writes what it timed; in a full run the configs it did not reach keep the rows of the kept
    verdict where one still holds (``details.kept_after_stop``), the rest are pending.
    ``configs`` (patterns ``KERNEL/VARIANT/SHAPE``, :func:`selected`) and ``below_loop`` (the
    configs whose kept row's loop ratio is under ``loop_threshold``): time again only those (and,
    with ``pending_only``, the pending ones), keep every other still-valid row as
    ``pending_only`` does; a re-timed row replaces the kept one and carries its loop ratio as
    ``loop_ratio_prev``; ``details.retimed`` lists the runs that re-timed a selection (this one
    appended to the kept verdict's: date, selection, configs with the loop ratio before and
    after). Re-timing only the configs that measured low favours passing (regression to the
    mean): judge a selection by all its rows' ``loop_ratio_prev`` -> ``loop_ratio``, not by the
    passes alone.

    Raises:
        ValueError: ``budget_s`` NaN or negative (:func:`budget_seconds`), a bad ``configs``
            pattern (:func:`config_patterns`), loop cycle bounds out of order.
        SelectionError: a selection, but the kept rows were measured on another device (a merge
            would mix devices) or no kept verdict holds (without ``pending_only``); nothing is
            written.
    """
    if budget_s is not None:
        budget_s = budget_seconds(budget_s)
    if configs is not None:
        configs = config_patterns(configs)
    cfg = {**DEFAULTS, **(cfg or {})}
    if not 2 <= int(cfg["loop_min_cycles"]) <= int(cfg["loop_max_cycles"]) <= len(stats.T975) + 1:
        raise ValueError(f"bench.loop_min_cycles {cfg['loop_min_cycles']} / loop_max_cycles "
                         f"{cfg['loop_max_cycles']}: want 2 <= min <= max <= {len(stats.T975) + 1}")
    op_dir, results = Path(op_dir), Path(results)
    host_build = Path(host_build) if host_build else results / "host" / "build.json"
    gate = gpu_gate("bench", op, gpu, out_json, attempt,
                    keep=lambda: restore_bench(results, op, op_dir, out_json, out_csv))
    if gate is not None:
        if gate["verdict"] not in MEASURED or not Path(out_csv).exists():
            write_csv([], out_csv)
        return gate
    library, why = library_for(op, results, host_build)
    if why:
        write_csv([], out_csv)
        return write(Verdict(stage="bench", op=op, verdict="BLOCKED", owner=why[0],
                             fail_class=routed(why[0]), attempt=attempt, summary=why[1]), out_json)
    # benchmark only what the functional test checked and passed
    try:
        test = read(results / op / "test.json")
    except VerdictError as exc:
        test = {"verdict": "missing", "summary": str(exc)}
    if test["verdict"] not in TEST_PASSED + ("FAIL",):
        # who must act on the functional test: its own owner; none run yet (NOT_RUN: no GPU) env,
        # missing: the workflow (run gpu_test first) tool
        owner = test.get("owner") or ("env" if test["verdict"] == "NOT_RUN" else "tool")
        write_csv([], out_csv)
        return write(Verdict(stage="bench", op=op, verdict="BLOCKED", owner=owner,
                             fail_class=test.get("fail_class") or routed(owner), attempt=attempt,
                             summary=f"no functional test to build on: gpu_test {test['verdict']}: "
                                     f"{test['summary']}"[:600]), out_json)
    tested = test.get("details", {}).get("variants", {})
    # a variant whose port agrees with the defective reference (REF_DEFECT) is timed: the port is faithful
    passed = {k for k, w in tested.items() if w in VARIANT_PASSED}
    nv_passed = {k for k, w in ((test.get("details", {}).get("nv") or {}).get("variants") or {}).items()
                 if w == "PASS"}
    t0 = time.monotonic()
    try:
        ctx = OpContext(op, op_dir, results, library, nv_build)
        todo = harness.cases(ctx.man, "perf")
        tols = {(k, v.id, s): harness.tolerance(ctx.man, v, s) for k, v, s in todo}
    except Exception as exc:  # noqa: BLE001 - manifest/module/library problems: one clear verdict
        write_csv([], out_csv)
        if isinstance(exc, (harness.HarnessError, manifest.ManifestError)):
            return write(input_error(op, exc, attempt, stage="bench"), out_json)
        # the library (FfiError on load) is the host's; anything else failed in the environment
        # (the same call succeeded in gpu_test: kernel.py, reference.py and analysis.json loaded)
        owner = "host" if type(exc).__name__ == "FfiError" else "env"
        return write(Verdict(stage="bench", op=op, verdict="ERROR", owner=owner, fail_class=owner,
                             attempt=attempt, summary=str(exc)[:600],
                             findings=[Finding("input", "critical", owner, str(exc)[:1500])]),
                     out_json)
    # a variant no test shape fits (shape constexprs set for a perf shape only) has no functional
    # test: it is timed, and the check of its timed outputs against the PyTorch semantics is its test
    perf_only = sorted({f"{k}/{v.id}" for k, v, _ in todo} - set(tested))
    rows, skipped = [], sorted({f"{k}/{v.id}" for k, v, _ in todo} & set(tested) - passed)
    kept, env = {}, harness.env_versions()
    selective = bool(configs) or below_loop
    retime: dict = {}       # config key -> the kept row it replaces (a selection re-timed)
    if selective:
        kept, src, other = kept_rows(results, op, op_dir, out_json, env)
        if other:
            raise SelectionError(f"--configs / --configs-below-loop: the kept rows of {src} were measured on "
                                 f"{other}, this is {env.get('device')}: a selection would mix devices; time "
                                 f"every config (no selection)")
        if src is None and not pending_only:
            raise SelectionError(f"--configs / --configs-below-loop: no kept bench verdict of {op} still holds "
                                 f"({out_json} or its .measured copy: missing, or measured other sources or "
                                 f"inputs): nothing to keep beside a selection; time every config, or add "
                                 f"--pending-only")
        thr = float(cfg["loop_threshold"])
        retime = {k: r for k, r in kept.items()
                  if (configs and selected(k, configs))
                  or (below_loop and isinstance(r.get("loop_ratio"), (int, float)) and r["loop_ratio"] < thr)}
        print(f"tileport: selection: {len(retime)} of {len(kept)} kept config(s) to time again"
              + (f" ({src})" if src else ""), flush=True)
    elif pending_only:
        kept, src, other = kept_rows(results, op, op_dir, out_json, env)
        if other:       # a ratio of another device's rows and this one's: not one measurement
            print(f"tileport: --pending-only: the kept rows of {src} were measured on {other}, this is "
                  f"{env.get('device')}: timing every config", flush=True)
        print(f"tileport: --pending-only: {len(kept)} config(s) kept from {src}" if kept else
              "tileport: --pending-only: no kept bench verdict still holds: timing every config", flush=True)
    stopped, longest = None, 0.0
    prev = _trap_sigterm()
    try:
        # a SIGTERM anywhere in the loop (between two configs too, not only inside one) stops it
        for kernel, variant, shape in todo:
            if f"{kernel}/{variant.id}" not in passed and f"{kernel}/{variant.id}" not in perf_only:
                continue
            key = tp_kept.config_key(kernel, variant.id, shape)
            if key in kept and key not in retime:
                continue
            if selective and key not in kept and not pending_only and not (configs and selected(key, configs)):
                continue            # not selected: stays pending
            spent = time.monotonic() - t0
            if budget_s is not None and spent + longest > budget_s:
                stopped = (f"time budget: {spent:.0f} s spent + {longest:.0f} s (the longest config so far) "
                           f"> --budget-s {budget_s:g}")
                break
            t_cfg = time.monotonic()
            try:
                row, context_lost = _one_config(ctx, op, kernel, variant, shape, cfg, tols, nv_passed)
            finally:
                longest = max(longest, time.monotonic() - t_cfg)
            if key in retime:
                row["loop_ratio_prev"] = retime[key].get("loop_ratio")
            rows.append(row)
            if context_lost:
                break                 # the context is gone: later configs cannot run
    except Stopped as exc:
        stopped = str(exc)
    finally:
        if prev is not None:
            signal.signal(signal.SIGTERM, prev)
    timed, fresh = len(rows), list(rows)
    kept_after_stop = None
    if stopped and not pending_only and not selective:
        # a full run stopped early: the configs it did not reach keep the rows of the measurement
        # it was replacing where they still hold (as --pending-only would keep them), instead of
        # overwriting bench.json and .measured/ with fewer rows (the valid ones lost)
        # (the merge below takes this run's row where both have one)
        kept, src, other = kept_rows(results, op, op_dir, out_json, env)
        if src is not None and other is None:
            now = {tp_kept.config_key(r["kernel"], r["variant"], r["shape"]) for r in rows}
            kept_after_stop = {"configs": len(kept.keys() - now), "from": str(src)}
    if kept:            # the kept rows and the new ones, in manifest order
        new = {tp_kept.config_key(r["kernel"], r["variant"], r["shape"]): r for r in rows}
        order = [tp_kept.config_key(k, v.id, s) for k, v, s in todo
                 if f"{k}/{v.id}" in passed or f"{k}/{v.id}" in perf_only]
        rows = [new.get(k) or kept[k] for k in order if k in new or k in kept]
    have = {tp_kept.config_key(r["kernel"], r["variant"], r["shape"]) for r in rows}
    # configs of benchmarked variants with no row (a lost CUDA context stopped the loop): pending
    pending = [{"kernel": k, "variant": v.id, "shape": "x".join(map(str, s))} for k, v, s in todo
               if (f"{k}/{v.id}" in passed or f"{k}/{v.id}" in perf_only)
               and tp_kept.config_key(k, v.id, s) not in have]
    write_csv(rows, out_csv)
    v = fold(op, rows, float(cfg["threshold"]), attempt, env,
             round(time.monotonic() - t0, 1), failed_test=test if skipped else None,
             loop_threshold=float(cfg["loop_threshold"]), writers=port_writers(results, op), pending=pending,
             defects=declared_defects(ctx.man))
    v.details["rows"] = [{k: r.get(k) for k in COLUMNS + ROW_EXTRAS} for r in rows]
    v.details["timed_now"] = timed          # rows timed by this run (the rest were kept: pending_only)
    if selective or pending_only:           # earlier selections stay on record while their rows do
        before = ((kept_bench(results, op, op_dir, out_json)[0] or {}).get("details") or {}).get("retimed") or []
        if selective:
            before = before + [retimed_record(fresh, retime, configs, below_loop, float(cfg["loop_threshold"]))]
        if before:
            v.details["retimed"] = before
    if stopped:
        v.details["stopped"] = stopped      # why configs were left pending (budget, SIGTERM)
        if kept_after_stop is not None:     # a full run's configs not reached: the kept rows
            v.details["kept_after_stop"] = kept_after_stop
        print(f"tileport: stopped: {stopped}; {len(pending)} config(s) pending", flush=True)
    v.details["not_benchmarked"] = {k: f"functional test {tested[k]}" for k in skipped}
    v.details["perf_only_variants"] = perf_only    # no test shape fits: checked at the perf shape only
    v.details["sources_sha"] = host_shim.sources_sha(results, op)     # what the library held
    v.details["inputs_sha"] = harness.inputs_sha(op_dir)
    v.details["test_inputs_sha"] = tp_kept.tested_inputs_sha(op_dir)    # what the rows' validity rests on
    v.details["provenance"] = provenance.collect(bench=cfg)       # GPU, clocks now, versions, commit
    v.artifacts["csv"] = str(out_csv)
    d = write(v, out_json)
    if Path(out_json) == results / op / "bench.json":
        snapshot(results, op, op_dir)
    return d


def main(argv=None) -> int:
    from tileport.gpu.test import cli_args, exit_status

    def extra(ap):
        ap.add_argument("--pending-only", action="store_true",
                        help="time only the perf configs no kept, still valid bench row covers (added "
                             "perf shapes, configs a session did not reach) and merge them with the kept rows")
        def budget(text):
            try:
                return budget_seconds(text)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        def patterns(text):
            try:
                return config_patterns(text)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        ap.add_argument("--configs", type=patterns, default=None,
                        metavar="KERNEL/VARIANT/SHAPE,...",
                        help="time again only these configs (shell wildcards per part) and keep every other "
                             "still-valid row, as --pending-only does")
        ap.add_argument("--configs-below-loop", action="store_true",
                        help="time again only the configs whose kept loop ratio is under bench.loop_threshold "
                             "(keep the rest); a re-timed row keeps the old ratio as loop_ratio_prev")
        ap.add_argument("--budget-s", type=budget, default=None, metavar="S",
                        help="wall seconds for timing: no config is started that would likely end past "
                             "it; the configs left are pending (a later --pending-only run times them)")

    a = cli_args("tileport CUPTI benchmark of one operator", argv, extra)
    cfg = {**(a.cfg.get("bench") or {}), "seed": a.seed}
    base = Path(a.results) / a.op
    try:
        d = run(a.op, Path(a.operators) / a.op, a.results, base / "bench.csv", base / "bench.json",
                gpu=a.gpu, cfg=cfg, pending_only=a.pending_only, budget_s=a.budget_s, configs=a.configs,
                below_loop=a.configs_below_loop)
    except SelectionError as exc:
        print(f"tileport: {exc}", file=sys.stderr)
        return 2
    print(d["verdict"], d["summary"])
    return exit_status(d)


if __name__ == "__main__":
    sys.exit(main())
