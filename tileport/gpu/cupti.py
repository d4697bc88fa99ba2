"""Device time of labelled calls from CUPTI activity records (through ``torch.profiler``).

Each call runs inside ``record_function("tp|<label>|<rep>")``. CUPTI reports every kernel with
a correlation id that also tags the CPU-side launch (``cuLaunchKernel`` / ``cudaLaunchKernel``,
categories ``cuda_driver`` / ``cuda_runtime`` in kineto's Chrome trace); the launch's CPU
timestamp falls inside exactly one annotation, so each kernel is attributed to the call that
launched it -- whatever library launched it (cuda.tile's runtime, cutile, ATen, cuBLAS) and
whatever its name. The L2 flush runs outside the annotations and is never counted.
Durations are the kernels' device times in µs (kineto's ``dur``).
"""
from __future__ import annotations

import bisect
import json
import os
import tempfile

PREFIX = "tp|"
_LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


def attribute_kernels(trace: dict) -> tuple[dict[str, list[tuple[str, float]]], list[str]]:
    """Kernels of a kineto Chrome trace grouped by the ``tp|...`` annotation that launched them.

    Returns ``({annotation name: [(kernel name, device µs), ...]}, [unattributed kernel names])``;
    every ``tp|`` annotation appears (an empty list when it launched nothing). Pure function over
    the trace dict (``{"traceEvents": [...]}``).
    """
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    spans = sorted((e["ts"], e["ts"] + e.get("dur", 0), e["name"]) for e in events
                   if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith(PREFIX))
    starts = [s[0] for s in spans]
    launch_ts = {}
    for e in events:
        if e.get("cat") in _LAUNCH_CATS and "correlation" in e.get("args", {}):
            launch_ts[e["args"]["correlation"]] = e["ts"]
    out: dict[str, list[tuple[str, float]]] = {s[2]: [] for s in spans}
    lost = []
    for e in events:
        if e.get("cat") != "kernel":
            continue
        ts = launch_ts.get(e.get("args", {}).get("correlation"))
        i = bisect.bisect_right(starts, ts) - 1 if ts is not None else -1
        if i >= 0 and spans[i][0] <= ts <= spans[i][1]:
            out[spans[i][2]].append((e["name"], float(e.get("dur", 0.0))))
        else:
            lost.append(e["name"])
    return out, lost


def profile(sides: list[tuple[str, callable]], reps: int, flush=None, sync=None) -> dict:
    """Run ``reps`` rounds of every side, interleaved (round r: side 1, side 2, ...), each call
    preceded by ``flush()`` (outside the measured range), under torch.profiler with CUDA (CUPTI)
    activities.

    Returns ``{"kernels": {label: [[(name, µs), ...] per rep]}, "device_us": {label: [sum µs per
    rep]}, "launches": {label: [count per rep]}, "unattributed": [names]}``.

    Raises:
        RuntimeError: the profiler recorded no kernel at all (CUPTI unavailable).
    """
    import torch
    from torch.profiler import ProfilerActivity, record_function
    from torch.profiler import profile as tprofile

    sync = sync or torch.cuda.synchronize
    with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for r in range(reps):
            for label, fn in sides:
                if flush is not None:
                    flush()
                with record_function(f"{PREFIX}{label}|{r}"):
                    fn()
        sync()
    fd, path = tempfile.mkstemp(suffix=".json", prefix="tileport-trace-")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as fh:
            trace = json.load(fh)
    finally:
        os.unlink(path)
    by_ann, lost = attribute_kernels(trace)
    if not any(by_ann.values()) and not lost:
        raise RuntimeError("torch.profiler recorded no CUDA kernel (is CUPTI available?)")
    res = {"kernels": {}, "device_us": {}, "launches": {}, "unattributed": lost}
    for label, _ in sides:
        ks = [by_ann.get(f"{PREFIX}{label}|{r}", []) for r in range(reps)]
        res["kernels"][label] = ks
        res["device_us"][label] = [sum(d for _, d in k) for k in ks]
        res["launches"][label] = [len(k) for k in ks]
    return res
