"""Stage ``bench``: CUPTI device time of the cuTile Python reference, the Rust port and PyTorch.

Per perf config (kernel x variant x perf shape that fits), in one process -- the variants that
passed gpu_test (PASS, or REF_DEFECT: the port agrees with a reference whose defect the manifest
declares, :mod:`tileport.model.defects`), and those no test shape fits (shape constexprs set for a
perf shape only: step 5 is then their only functional check; ``details.perf_only_variants``); a
variant that failed its functional test is not timed (``details.not_benchmarked``):

1. one untimed call per side (JIT compilation), then warm-up calls for ``warmup_ms``;
2. ``reps`` rounds sized from ``rep_ms`` (clamped to ``[min_reps, max_reps]``); each round
   calls ref, port, torch in turn -- interleaved, pair by pair -- each call preceded by an L2
   flush (``l2_flush_mib`` of memset, outside the measured range; a memset leaves dirty lines
   that the timed kernel may partly write back: a read-only flush moved 25-80 µs kernels by
   1-5 µs on the H200: docs/gpu-stages.md); the device time of a call is
   the sum of the CUPTI kernel durations it launched (:func:`tileport.gpu.cupti.profile`);
3. median and spread per side; ratio = ref median / port median (> 1: the port is faster):
   each side as its runtime launches it, what a user gets. The *matched reading* sits beside it:
   ``ref_matched`` is the same reference kernel compiled under the launch facts cutile gives the
   port (:mod:`tileport.gpu.matched`; a side of the same interleaved CUPTI rounds, not of the
   loops), ``ratio_matched`` = ref_matched median / port median (parity is judged on it),
   ``matched_gain`` = ref median / ref_matched median (what the launchers' facts alone are
   worth), ``matched_notes`` what could not be matched, ``matched_symbol`` the compiled name;
   the median of the per-round paired ratios next to it; vs_torch = torch median / port median
   (none where torch launched no kernel: ``torch_note``). A ref or port median under the
   hardware's floor (:func:`tileport.gpu.fold.time_floor`) is profiled once more, and still
   under it makes the row a measurement error (``implausible``), never folded;
4. time per call in a loop, the other speed users feel (:func:`loop_times`): per loop, ``n``
   calls of one side enqueued back to back (no L2 flush), one synchronisation; loop time per
   call = (enqueue + drain) / n, host time per call = the enqueue alone / n (the CPU cost of a
   call while the device keeps up). Both kernel sides launch on one stream fetched once when the
   call is built (:func:`tileport.gpu.harness.build_call`), so their host paths differ only by the
   launchers; the loops run L2-warm (no flush between calls: the data of the previous call stays
   in L2 where it fits). Rows carry ``harness`` (:data:`tileport.gpu.fold.HARNESS`); only rows of
   the current harness are loop-gated. ``n`` = ``loop_ms`` of device time (at least 3 calls, at
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
   ``ref_mismatch`` for the reference: a reference outside tolerance is a warning, as in gpu_test;
   an output the kernel's ``error_scale`` names is judged against its error scale, as in gpu_test:
   :func:`tileport.gpu.harness.compare_outputs`)
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
BELOW_THRESHOLD; FAIL if a timed port call errs or its output is wrong; NOT_RUN without GPU. A
config cutile 0.5.0 or the cuTile Python reference cannot run is BLOCKED per config
(``details.blocked_configs``), one timed under the hardware's floor excluded
(``details.implausible_configs``): the other configs are folded.
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
import math
import signal
import sys
import threading
import time
from datetime import datetime, timezone
from fnmatch import fnmatchcase
from pathlib import Path

from tileport.core import provenance, stats
from tileport.core.verdict import TEST_PASSED, VARIANT_PASSED, Finding, Verdict, write
from tileport.gpu import cupti, harness
from tileport.gpu.fold import (  # noqa: F401 - loop_class, loop_gate, NV_COLUMNS, time_floor re-exported
    COLUMNS,
    DEFAULTS,
    HARNESS,
    LAUNCH_FLOOR_US,
    MEASURED,
    NV_COLUMNS,
    ROW_EXTRAS,
    current_harness,
    fold,
    implausible,
    implausible_text,
    loop_class,
    loop_gate,
    positive,
    routed,
    time_floor,
    write_csv,
)
from tileport.gpu.kept import Kept, config_key
from tileport.gpu.test import (
    OpContext,
    cli_args,
    exit_status,
    failure_class,
    gpu_gate,
    input_error,
    library_for,
)
from tileport.host.ffi import cutile_limit
from tileport.model import manifest
from tileport.model.manifest import base_env, declared_defects

REPO = Path(__file__).resolve().parents[2]

#: calls per loop: loop_ms / device time per call, clamped here (CUDA's launch queue holds about
#: a thousand launches; beyond it a launch blocks and host time would include waiting; at 3 calls
#: of a long kernel the first call's enqueue is well under 1 % of the loop)
LOOP_MIN_CALLS, LOOP_MAX_CALLS = 3, 200

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


def measure(c, cfg: dict, tol: dict, out_bytes: int | None = None, device: str | None = None) -> dict:
    """Benchmark one :class:`tileport.gpu.harness.Call` (steps 1-5 of the module doc). Returns a row
    of :data:`COLUMNS` (numbers in µs) plus ``samples`` (per-round device µs per side),
    ``loop_samples`` (per side, the loop time per call of every timed loop, µs, in time order) and
    ``loop_design`` (:func:`loop_times`' ``order``, ``warmup``, ``per_cycle``, calls per loop by side
    and why it stopped).

    ``out_bytes`` (bytes the call must write, :func:`written_bytes`) and ``device`` (its name) set
    the floor of a plausible device time (:func:`tileport.gpu.fold.time_floor`): a reference or
    port median under it is profiled once more (``remeasured``: the first medians); still under it,
    the row carries ``error`` and ``implausible`` (the evidence) and its ratios only where they
    divide. A torch (or NVIDIA) side timed under the launch floor -- a call that launched no
    kernel, such as ``x.contiguous()`` on a contiguous tensor -- has no device figures
    (``torch_us``, ``vs_torch``, ``ref_vs_torch`` None; ``torch_note`` says why; NVIDIA's in
    ``nv_error``); the rest of the row stands."""
    import torch  # lazy: a CPU job never loads torch

    sides = [("ref", c.ref), ("port", c.port), ("torch", c.torch)]
    first_calls(sides, torch.cuda.synchronize)      # JIT compile / cuBLAS heuristics, untimed
    matched_error = ""
    if getattr(c, "ref_matched", None) is not None:     # the matched reading: a side if it compiles and runs
        try:
            c.ref_matched()
            torch.cuda.synchronize()
            sides.insert(1, ("ref_matched", c.ref_matched))
        except Exception as exc:  # noqa: BLE001 - the matched reading's failure is a note of its own
            matched_error = f"{type(exc).__name__}: {exc}"[:600]
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
    row = {"op": c.op, "kernel": c.kernel, "variant": c.variant.id,
           "shape": "x".join(map(str, c.shape)), "grid": "x".join(map(str, c.grid)), "reps": reps,
           "out_bytes": out_bytes}
    first = {f"{s}_us": stats.median(prof["device_us"][s]) for s in ("ref", "port")}
    if implausible({**row, **first}, device):       # under the hardware's floor: profile once more
        print(f"{c.kernel}/{c.variant.id} {row['shape']}: device time under the floor (ref {first['ref_us']!r} "
              f"/ port {first['port_us']!r} µs): profiling it once more", flush=True)
        prof = cupti.profile(sides, reps, flush=flush_buf.zero_)
        row["remeasured"] = first
    dev = prof["device_us"]
    labels = [label for label, _ in sides]
    for s in labels:
        row[f"{s}_us"] = stats.median(dev[s])
        row[f"{s}_iqr_us"] = stats.spread(dev[s])["iqr"]
        ls = sorted(set(prof["launches"][s]))
        row[f"{s}_launches"] = ls[0] if len(ls) == 1 else "/".join(map(str, ls))
    for s in [s for s in labels if s in ("torch", "nv") and not row[f"{s}_us"] >= LAUNCH_FLOOR_US]:
        # an optional side: no device figures, the rest of the row stands
        note = ("launched no kernel" if not any(prof["launches"][s]) else
                f"device time {row[f'{s}_us']!r} µs is under the launch floor {LAUNCH_FLOOR_US} µs")
        row[f"{s}_us"] = row[f"{s}_iqr_us"] = None
        if s == "torch":
            row["torch_note"] = f"torch {note}"
        else:
            nv_error = f"NVIDIA's port {note}"
    row["ratio"] = row["ref_us"] / row["port_us"] if positive(row["port_us"]) else None
    row["paired_ratio"] = (stats.median(stats.paired_ratios(dev["ref"], dev["port"]))
                           if all(positive(x) for x in dev["port"]) else None)
    row["vs_torch"] = (row["torch_us"] / row["port_us"] if positive(row["torch_us"]) and positive(row["port_us"])
                       else None)
    row["ref_vs_torch"] = (row["torch_us"] / row["ref_us"] if positive(row["torch_us"]) and positive(row["ref_us"])
                           else None)
    if "ref_matched" in labels:
        row["ratio_matched"] = (row["ref_matched_us"] / row["port_us"] if positive(row["port_us"])
                                and positive(row["ref_matched_us"]) else None)
        row["matched_gain"] = (row["ref_us"] / row["ref_matched_us"] if positive(row["ref_matched_us"])
                               and positive(row["ref_us"]) else None)
    del flush_buf
    n = loop_calls(min(row["ref_us"], row["port_us"]), cfg["loop_ms"])     # ref and port alike
    loop_sides = [(label, fn) for label, fn in sides if label != "ref_matched"]
    ns = {s: n if s in ("ref", "port") else loop_calls(row[f"{s}_us"] or 0.0, cfg["loop_ms"])
          for s, _ in loop_sides}
    loops = loop_times(loop_sides, ns, torch.cuda.synchronize, min_cycles=int(cfg["loop_min_cycles"]),
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
    expected = c.expected()
    if "ref_matched" in labels:         # the matched reference's own output, then the reference's
        c.reset()
        c.ref_matched()
        torch.cuda.synchronize()
        bad = [r for r in harness.compare_outputs(c.outputs["ref"], expected, tol) if not r["ok"]]
        row["matched_checked"] = "ok" if not bad else "MISMATCH"
        row["matched_mismatch"] = harness.mismatch_text(bad[0], "ref") if bad else ""
        if not c.in_place:
            c.ref()
    if c.in_place:          # outputs with given first values: check one call on those values
        c.reset()
        for label, fn in sides:
            if label not in ("torch", "ref_matched"):
                fn()
    torch.cuda.synchronize()
    for side, col in (("port", "checked"), ("ref", "ref_checked")):
        bad = [r for r in harness.compare_outputs(c.outputs[side], expected, tol) if not r["ok"]]
        row[col] = "ok" if not bad else "MISMATCH"
        row[f"{side}_mismatch"] = harness.mismatch_text(bad[0], side) if bad else ""
    if row["checked"] == row["ref_checked"] == "MISMATCH":
        # both miss: the same way (the port within tolerance of the reference kernel, NaN where it
        # has NaN; an output with an error scale takes this call's) makes it the manifest's, as
        # gpu_test.same_miss (fold)
        row["port_matches_ref"] = harness.matches_ref(c.outputs["port"], c.outputs["ref"], expected, tol)
    ev = implausible(row, device)
    row["error"] = implausible_text(ev) if ev else ""
    if ev:
        row["implausible"] = ev
    row["nv_error"] = nv_error
    row["matched_error"] = matched_error
    if getattr(c, "matched", None) is not None:
        row["matched_notes"] = "; ".join(c.matched.notes)
        row["matched_symbol"] = " ".join(dict.fromkeys(c.matched.symbols))
    row["harness"] = HARNESS
    if "nv" in labels and positive(row["nv_us"]) and positive(row["port_us"]) and positive(row["ref_us"]):
        row["vs_nv"] = row["nv_us"] / row["port_us"]
        row["ref_vs_nv"] = row["nv_us"] / row["ref_us"]
    if "nv" in labels:
        row["nv_loop_us"] = stats.geomean(loops["nv"]["loop_us"])
        row["nv_checked"] = ("ok" if all(r["ok"] for r in harness.compare_outputs(c.outputs["nv"], expected, tol))
                             else "MISMATCH")
    row["samples"] = {s: dev[s] for s in labels}
    row["loop_samples"] = {s: loops[s]["loop_us"] for s, _ in loop_sides}
    row["loop_design"] = {"order": loops["order"], "warmup": loops["warmup"], "per_cycle": loops["per_cycle"],
                          "calls": loops["n"], "stop": loops["stop"]}
    row["kernel_names"] = {s: sorted({n for k in prof["kernels"][s] for n, _ in k}) for s in labels}
    return row


def written_bytes(c, man: dict) -> int | None:
    """Bytes (B) the call ``c`` must write: the port's outputs (:attr:`tileport.gpu.harness.Call.outputs`)
    that start without given values (the harness fills them with NaN, so a call that passes its
    check overwrites every element; :func:`tileport.gpu.harness.reset_sources`). An output whose
    first values the manifest gives (``init``: updated in place, accumulated into) may be written
    in part and is not counted; which ones, from :func:`tileport.gpu.harness.tensor_plan` of
    ``man``. None when ``c`` has no port outputs or the plan does not line up with them."""
    outs = (getattr(c, "outputs", None) or {}).get("port") or []
    if not outs:
        return None
    given = [False] * len(outs)
    if getattr(c, "in_place", False):
        import torch  # lazy: a CPU job never loads torch

        env = base_env(man, list(c.shape), c.variant.constexprs,
                       torch.cuda.get_device_properties(0).multi_processor_count)
        given = [spec["init_given"] for spec in harness.tensor_plan(man, c.kernel, c.variant, env)
                 if spec["role"] != "input" for _ in spec["shapes"]]
    if len(given) != len(outs):
        return None
    return sum(t.numel() * t.element_size() for t, g in zip(outs, given) if not g)


class SelectionError(ValueError):
    """A selection of configs to time again (``--configs``, ``--configs-below-loop``) that this
    run cannot honour without mixing measurements (:func:`run`)."""


def selected(key: tuple[str, str, str], patterns: list[str]) -> bool:
    """Whether a config (:func:`tileport.gpu.kept.config_key`) matches one of ``patterns``, each
    ``KERNEL/VARIANT/SHAPE`` with shell wildcards per part (``fnmatch``, case-sensitive; ``*``
    for a whole part). Raises ValueError for a pattern without exactly three parts."""
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
    return {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "selection": {"configs": list(patterns or []), "below_loop": below_loop,
                          "loop_threshold": loop_threshold},
            "configs": [{"kernel": r["kernel"], "variant": r["variant"], "shape": r["shape"],
                         "loop_ratio_prev": (retime.get(config_key(r["kernel"], r["variant"], r["shape"]))
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
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _stop_on_sigterm)


def out_of_memory(exc: BaseException) -> bool:
    """``exc`` is a failed device allocation: torch's ``OutOfMemoryError`` (a RuntimeError
    subclass, matched by name so that no torch import is needed) or a CUDA
    ``CUDA_ERROR_OUT_OF_MEMORY`` / ``cudaErrorMemoryAllocation`` another side reported."""
    return (type(exc).__name__ == "OutOfMemoryError" or "CUDA_ERROR_OUT_OF_MEMORY" in str(exc)
            or "cudaErrorMemoryAllocation" in str(exc))


def _one_config(ctx, op: str, kernel: str, variant, shape: tuple, cfg: dict, tols: dict,
                nv_passed: set, device: str | None = None) -> tuple[dict, bool]:
    """Time one perf config (:func:`measure`; ``device``: the GPU's name, for the floor of a
    plausible time) and print its line. Returns its bench.csv row and whether the CUDA context was
    lost (later configs cannot run). A failure of the config is its row (``error``,
    ``error_class``), not an exception: ``blocked`` where cutile 0.5.0 cannot launch it, where
    the GPU lacks the device memory its arrays need (:func:`out_of_memory`; ``blocked_side``
    ``device``, owner env, the CUDA context kept), or where
    the cuTile Python reference's first call fails (``blocked_side`` ``ref``: a perf shape the
    kernel does not run, the manifest's), so that either is that config's finding, as
    :func:`tileport.gpu.fold.fold` folds it; :class:`Stopped` passes through."""
    base = {"op": op, "kernel": kernel, "variant": variant.id, "shape": "x".join(map(str, shape)),
            "timed_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}   # the row's own date
    try:
        key = f"{kernel}/{variant.id}"
        c = ctx.call(kernel, variant, shape, cfg["seed"], nv=key in nv_passed)
        if kernel in ctx.nv and key not in nv_passed and c.nv is None and not c.nv_note:
            c.nv_note = "NVIDIA's port did not pass the functional test for this variant"
        nbytes = written_bytes(c, ctx.man)
        row = {**measure(c, cfg, tols[kernel, variant.id, shape], out_bytes=nbytes, device=device),
               **tols[kernel, variant.id, shape], "timed_at": base["timed_at"]}
        shim = ctx.lib.shims.get(c.symbol)
        if shim is not None and shim.restaged:   # host copies timed with the port (ffi.restage_strides)
            row["restaged"] = dict(shim.restaged)
            shim.restaged.clear()
        del c
    except Exception as exc:  # noqa: BLE001 - one config's failure is a row, not a crash
        inner = exc.exc if isinstance(exc, SideFailed) else exc
        row = {**base, "error": (str(exc) if isinstance(exc, SideFailed)
                                 else f"{type(exc).__name__}: {exc}")[:600],
               "error_class": error_class(exc)}
        if (not isinstance(exc, SideFailed) or exc.side == "port") and cutile_limit(inner):
            row["blocked"] = cutile_limit(inner)
            print(f"{kernel}/{variant.id} {base['shape']}: BLOCKED (cutile 0.5.0 cannot launch it): "
                  f"{row['error']}", flush=True)
        elif out_of_memory(inner):
            # the arrays do not fit this GPU: the config's finding (owner env), not a lost context
            # (torch frees what it allocated; the configs after it run)
            row["blocked"] = (f"this GPU ({device or 'unknown'}) lacks the device memory the config's arrays "
                              f"need: {type(inner).__name__}: {inner}")[:600]
            row["blocked_side"] = "device"
            print(f"{kernel}/{variant.id} {base['shape']}: BLOCKED (device memory): {row['error']}", flush=True)
            return row, False
        elif isinstance(exc, SideFailed) and exc.side == "ref":
            # as the port's cutile limit: this config's finding (owner manifest), not the operator's FAIL
            row["blocked"] = (f"the cuTile Python reference's first (untimed) call at this config raised "
                              f"{type(inner).__name__}: {inner}")[:600]
            row["blocked_side"] = "ref"
            print(f"{kernel}/{variant.id} {base['shape']}: BLOCKED (the cuTile Python reference cannot run it): "
                  f"{row['error']}", flush=True)
        return row, "CUDA" in str(exc)
    num = lambda k, f: format(row[k], f) if isinstance(row.get(k), (int, float)) else "-"  # noqa: E731
    nv = f", NVIDIA {row['nv_us']:.1f} us" if isinstance(row.get("nv_us"), float) else ""
    print(f"{kernel}/{variant.id} {row['shape']}: ref {num('ref_us', '.1f')} us, port "
          f"{num('port_us', '.1f')} us, torch {num('torch_us', '.1f')} us{nv}, ratio {num('ratio', '.3f')}; "
          f"loop ref {row['ref_loop_us']:.1f} / port {row['port_loop_us']:.1f} / torch "
          f"{row['torch_loop_us']:.1f} us per call, loop ratio {row['loop_ratio']:.3f} "
          f"[{row['loop_ratio_lo']:.3f}, {row['loop_ratio_hi']:.3f}] over {row['loop_cycles']} cycles, host "
          f"ref {row['ref_host_us']:.1f} / port {row['port_host_us']:.1f} us; ref vs torch "
          f"{num('ref_vs_torch', '.2f')}" + "".join(f"; {x}" for x in (row.get("torch_note"), row.get("error")) if x),
          flush=True)
    return row, False


def benchmarked(test: dict) -> tuple[dict, set, set]:
    """What a gpu_test verdict ``test`` lets the benchmark time: ``(tested, passed, nv_passed)``
    -- every ``kernel/variant`` the test judged (its word), those that passed (PASS, or REF_DEFECT:
    the port agrees with a defective reference, so it is faithful and timed), and those whose
    NVIDIA port passed too (its fourth side). :func:`run` and :func:`compile_ahead` share it."""
    tested = test.get("details", {}).get("variants", {})
    passed = {k for k, w in tested.items() if w in VARIANT_PASSED}
    nv_passed = {k for k, w in ((test.get("details", {}).get("nv") or {}).get("variants") or {}).items()
                 if w == "PASS"}
    return tested, passed, nv_passed


def run(op: str, op_dir: str | Path, results: str | Path, out_csv: str | Path,
        out_json: str | Path, gpu: str = "auto", cfg: dict | None = None,
        host_build: str | Path | None = None, attempt: int = 1,
        nv_build: str | Path | None = None, pending_only: bool = False,
        budget_s: float | None = None, configs: list[str] | None = None,
        below_loop: bool = False) -> dict:
    """Stage entry point (see module doc). Returns the verdict written to ``out_json``.
    ``nv_build``: NVIDIA's build verdict (default ``<results>/nvidia/shipped/build.json``).
    ``pending_only``: time only the perf configs that no kept row still valid covers
    (:meth:`tileport.gpu.kept.Kept.bench`: ``out_json`` or the ``.measured`` copy, reconciled; a
    row of an older harness, :func:`tileport.gpu.fold.current_harness`, is timed again) and write
    them merged with the kept rows (bench.json and bench.csv in manifest order; geomeans over all
    valid rows); with no valid kept verdict, or one measured on another device
    (:func:`tileport.gpu.kept.other_device`), it times every config. ``budget_s``: wall seconds for the timing
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
    keeper = Kept(results, op, op_dir)     # reads and hashes each input once (the manifest too)
    gate = gpu_gate("bench", op, gpu, out_json, attempt, keep=lambda: keeper.restore_bench(out_json, out_csv))
    if gate is not None:
        if gate["verdict"] not in MEASURED or not Path(out_csv).exists():
            write_csv([], out_csv)
        return gate
    library, why = library_for(op, results, host_build, keeper)
    if why:
        write_csv([], out_csv)
        return write(Verdict(stage="bench", op=op, verdict="BLOCKED", owner=why[0],
                             fail_class=routed(why[0]), attempt=attempt, summary=why[1]), out_json)
    # benchmark only what the functional test checked and passed
    # an unreadable test.json is the owner's ERROR saying so (Kept.verdict: owner env for a damaged copy)
    test = keeper.verdict("test.json") or {"verdict": "missing",
                                           "summary": f"{results / op / 'test.json'}: no verdict file"}
    if test["verdict"] not in TEST_PASSED + ("FAIL",):
        # who must act on the functional test: its own owner; none run yet (NOT_RUN: no GPU) env,
        # missing: the workflow (run gpu_test first) tool
        owner = test.get("owner") or ("env" if test["verdict"] == "NOT_RUN" else "tool")
        write_csv([], out_csv)
        return write(Verdict(stage="bench", op=op, verdict="BLOCKED", owner=owner,
                             fail_class=test.get("fail_class") or routed(owner), attempt=attempt,
                             summary=f"no functional test to build on: gpu_test {test['verdict']}: "
                                     f"{test['summary']}"[:600]), out_json)
    tested, passed, nv_passed = benchmarked(test)
    t0 = time.monotonic()
    try:
        ctx = OpContext(op, op_dir, results, library, nv_build, keeper)
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
        kept, src, other = keeper.rows(out_json, env)
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
        kept, src, other = keeper.rows(out_json, env)
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
            key = config_key(kernel, variant.id, shape)
            if (key in kept and key not in retime and not kept[key].get("implausible")
                    and (selective or current_harness(kept[key]))):
                # a kept row stands (one timed under the hardware's floor is timed again, and with
                # --pending-only one of an older harness: its loop ratio is not gated)
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
                row, context_lost = _one_config(ctx, op, kernel, variant, shape, cfg, tols, nv_passed,
                                                env.get("device"))
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
        kept, src, other = keeper.rows(out_json, env)
        if src is not None and other is None:
            now = {config_key(r["kernel"], r["variant"], r["shape"]) for r in rows}
            kept_after_stop = {"configs": len(kept.keys() - now), "from": str(src)}
    if kept:            # the kept rows and the new ones, in manifest order
        new = {config_key(r["kernel"], r["variant"], r["shape"]): r for r in rows}
        order = [config_key(k, v.id, s) for k, v, s in todo
                 if f"{k}/{v.id}" in passed or f"{k}/{v.id}" in perf_only]
        rows = [new.get(k) or kept[k] for k in order if k in new or k in kept]
    have = {config_key(r["kernel"], r["variant"], r["shape"]) for r in rows}
    # configs of benchmarked variants with no row (a lost CUDA context stopped the loop): pending
    pending = [{"kernel": k, "variant": v.id, "shape": "x".join(map(str, s))} for k, v, s in todo
               if (f"{k}/{v.id}" in passed or f"{k}/{v.id}" in perf_only)
               and config_key(k, v.id, s) not in have]
    write_csv(rows, out_csv)
    v = fold(op, rows, float(cfg["threshold"]), attempt, env,
             round(time.monotonic() - t0, 1), failed_test=test if skipped else None,
             loop_threshold=float(cfg["loop_threshold"]), writers=keeper.writers, pending=pending,
             defects=declared_defects(ctx.man))
    v.details["rows"] = [{k: r.get(k) for k in COLUMNS + ROW_EXTRAS} for r in rows]
    v.details["timed_now"] = timed          # rows timed by this run (the rest were kept: pending_only)
    if selective or pending_only:           # earlier selections stay on record while their rows do
        before = ((keeper.bench(out_json)[0] or {}).get("details") or {}).get("retimed") or []
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
    v.details["sources_sha"] = keeper.sources_sha             # what the library held
    v.details["inputs_sha"] = keeper.inputs_sha
    v.details["test_inputs_sha"] = keeper.test_inputs_sha     # what the rows' validity rests on
    v.details["provenance"] = provenance.collect(bench=cfg)       # GPU, clocks now, versions, commit
    # cubins this process read from cutile's disk cache (--compile-only beforehand) vs compiled
    v.details["jit_cache"] = ctx.lib.jit_cache_stats()
    v.artifacts["csv"] = str(out_csv)
    d = write(v, out_json)
    if Path(out_json) == results / op / "bench.json":
        keeper.snapshot()
    return d


def shard_of(text: str) -> tuple[int, int]:
    """``--shard K/N`` as (K, N) with 0 <= K < N. Raises ValueError naming the value."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: want K/N, two integers (e.g. 0/4)") from None
    if not 0 <= k < n:
        raise ValueError(f"--shard {text!r}: want 0 <= K < N")
    return k, n


def compile_ahead(op: str, op_dir: str | Path, results: str | Path, host_build: str | Path | None = None,
                  nv_build: str | Path | None = None, shard: tuple[int, int] = (0, 1),
                  configs: list[str] | None = None, seed: int = 0) -> dict:
    """Compile the kernels :func:`run` would time, and time nothing: per perf config of a variant
    that passed gpu_test (``configs``: only those matching; ``shard`` (K, N): only the K-th of N
    contiguous blocks of the configs in manifest order, so that the configs of one variant, which
    share compiled kernels, stay in one process), one untimed call of each kernel side (the
    reference as launched and matched, the port, NVIDIA's) fills the JIT disk caches -- cuTile
    Python's (``CUDA_TILE_CACHE_DIR``) and cutile's (``TILEPORT_JIT_CACHE``,
    :func:`tileport.host.ffi.jit_cache_env`) -- so that N such processes compile in parallel and
    the timing process reads the cubins (tileiras runs on the CPU; a process's first call of each
    config otherwise costs seconds of tileiras per side). Writes no verdict. Returns
    ``{"configs": compiled, "failed": [(config, error)], "seconds": wall s, "jit_cache": counters}``.

    Raises:
        RuntimeError: no passed functional test or no usable library to build on (what
            :func:`run` would verdict BLOCKED).
    """
    configs = config_patterns(configs) if configs is not None else None
    op_dir, results = Path(op_dir), Path(results)
    host_build = Path(host_build) if host_build else results / "host" / "build.json"
    keeper = Kept(results, op, op_dir)
    library, why = library_for(op, results, host_build, keeper)
    if why:
        raise RuntimeError(f"{op}: {why[1]}")
    test = keeper.verdict("test.json") or {}
    if test.get("verdict") not in TEST_PASSED + ("FAIL",):
        raise RuntimeError(f"{op}: no functional test to build on: {results / op / 'test.json'} "
                           f"{test.get('verdict', 'missing')}")
    tested, passed, nv_passed = benchmarked(test)
    import torch  # lazy: a CPU job never loads torch

    ctx = OpContext(op, op_dir, results, library, nv_build, keeper)
    todo = harness.cases(ctx.man, "perf")
    perf_only = {f"{k}/{v.id}" for k, v, _ in todo} - set(tested)
    t0, done, failed = time.monotonic(), 0, []
    k_shard, n_shard = shard
    for i, (kernel, variant, shape) in enumerate(todo):
        key = config_key(kernel, variant.id, shape)
        if (i * n_shard // len(todo) != k_shard or (f"{kernel}/{variant.id}" not in passed | perf_only)
                or (configs and not selected(key, configs))):
            continue
        t = time.monotonic()
        try:
            c = ctx.call(kernel, variant, shape, seed, nv=f"{kernel}/{variant.id}" in nv_passed)
            sides = [(s, getattr(c, s)) for s in ("ref", "port", "ref_matched", "nv") if getattr(c, s, None)]
            first_calls(sides, torch.cuda.synchronize)
            done += 1
            print(f"{'/'.join(key)}: compiled {', '.join(s for s, _ in sides)} in "
                  f"{time.monotonic() - t:.1f} s", flush=True)
            del c
        except Exception as exc:  # noqa: BLE001 - the timing run meets and records it
            failed.append(("/".join(key), f"{type(exc).__name__}: {exc}"[:300]))
            print(f"{'/'.join(key)}: {failed[-1][1]}", flush=True)
    return {"configs": done, "failed": failed, "seconds": round(time.monotonic() - t0, 1),
            "jit_cache": ctx.lib.jit_cache_stats()}


def main(argv=None) -> int:
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
        def shard(text):
            try:
                return shard_of(text)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        ap.add_argument("--compile-only", action="store_true",
                        help="compile every config's kernels into the JIT disk caches and time nothing "
                             "(no verdict written); run N of these with --shard K/N before timing")
        ap.add_argument("--shard", type=shard, default=(0, 1), metavar="K/N",
                        help="with --compile-only: the K-th of N contiguous blocks of the configs (manifest order)")
        ap.add_argument("--budget-s", type=budget, default=None, metavar="S",
                        help="wall seconds for timing: no config is started that would likely end past "
                             "it; the configs left are pending (a later --pending-only run times them)")

    a = cli_args("tileport CUPTI benchmark of one operator", argv, extra)
    cfg = {**(a.cfg.get("bench") or {}), "seed": a.seed}
    base = Path(a.results) / a.op
    if a.compile_only:
        try:
            r = compile_ahead(a.op, Path(a.operators) / a.op, a.results, shard=a.shard, configs=a.configs,
                              seed=a.seed)
        except (RuntimeError, OSError, ValueError) as exc:
            print(f"tileport: --compile-only: {exc}", file=sys.stderr)
            return 2
        print(f"COMPILED {r['configs']} config(s) of {a.op} in {r['seconds']} s, {len(r['failed'])} failed; "
              f"cutile JIT disk cache {r['jit_cache']}")
        return 0
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
