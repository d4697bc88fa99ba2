"""How noisy is the loop ratio? Figures from published bench.json rows (no GPU; reads data only).

For every row of ``<dir>/*/bench.json`` (``details.rows[]`` with ``loop_samples``: per side, the
loop time per call of every round, µs) it prints:

1. the spread of each side's rounds (range / median), by device-time band;
2. estimators of the loop ratio compared on the configs where the truth is known best: device-bound
   (host time per call < half the device time on both sides: the loop runs at the device's pace)
   and device ratio within 1 % of 1 -- there the loop ratio should be the device ratio; error =
   log(estimate / device ratio): the ratio of the sides' medians (the benchmark before the
   balanced design), the median and the geomean of the per-round paired ratios ref_r / port_r,
   the paired median without round 0;
3. carry-over: in the old rotation ``ref`` always ran right after ``torch`` and ``port`` right after
   ``ref`` (or first); per config, how much slower a side ran right after the other kernel side
   than after torch (rows with ``loop_design``: by their own order);
4. the cycles the adaptive loop (:func:`tileport.gpu.bench.loop_times`) would need for a 95 %
   interval of half-width ``--width``, from each config's spread of paired log ratios, and the
   loop time it would add per config against the six rounds timed before (with ``--min-calls`` calls
   per loop at least, ``--loop-ms`` of device time per loop: ref and port the same number of calls, torch
   and NVIDIA's port sized by their own device time, ``--max-s`` loop seconds per config).

Run: ``python -m tileport.gpu.loopstudy docs/results/h200/ops [--width 0.01] [--max-cycles 10]``.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics as st
import sys
from pathlib import Path

from tileport.core import stats
from tileport.gpu.bench import LOOP_MAX_CALLS, LOOP_MIN_CALLS
from tileport.gpu.fold import DEFAULTS


def load_rows(root: Path) -> list[dict]:
    """Rows with loop samples of every ``root/*/bench.json`` (timed without error)."""
    rows = []
    for f in sorted(root.glob("*/bench.json")):
        for r in (json.loads(f.read_text()).get("details") or {}).get("rows") or []:
            if r.get("loop_samples") and not r.get("error"):
                rows.append(r)
    return rows


def order_of(r: dict) -> tuple[list[list[str]], str | None]:
    """The row's rounds (each an order of its sides) and the side of its untimed first loop:
    ``loop_design`` where the row has one, else the rotation the benchmark used before the
    balanced cycles (the sides rotated left by the round number, no untimed loop)."""
    if isinstance(r.get("loop_design"), dict):
        return r["loop_design"]["order"], r["loop_design"].get("warmup")
    labels = list(r["loop_samples"])
    return [labels[i % len(labels):] + labels[:i % len(labels)] for i in range(len(r["loop_samples"]["ref"]))], None


def predecessors(r: dict) -> dict:
    """(side, i) -> the side whose loop ran just before the side's i-th loop (None: nothing timed)."""
    rounds, first = order_of(r)
    seq, seen = [], {}
    for rnd in rounds:
        for s in rnd:
            seq.append((s, seen.get(s, 0)))
            seen[s] = seen.get(s, 0) + 1
    return {x: (seq[j - 1][0] if j else first) for j, x in enumerate(seq)}


def estimators(r: dict) -> dict:
    """Loop-ratio estimates of one row from its per-round loop times."""
    a, b = r["loop_samples"]["ref"], r["loop_samples"]["port"]
    pr = [x / y for x, y in zip(a, b)]
    return {"ratio of medians": st.median(a) / st.median(b), "median paired": st.median(pr),
            "geomean paired": math.exp(st.fmean(map(math.log, pr))),
            "median paired, round 0 out": st.median(pr[1:])}


def device_bound(r: dict) -> bool:
    return r["ref_host_us"] < 0.5 * r["ref_us"] and r["port_host_us"] < 0.5 * r["port_us"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", type=Path, help="folder of <op>/bench.json (docs/results/h200/ops)")
    ap.add_argument("--width", type=float, default=DEFAULTS["loop_ci_width"],
                    help="target half-width of the 95 %% interval (relative)")
    ap.add_argument("--max-cycles", type=int, default=DEFAULTS["loop_max_cycles"])
    ap.add_argument("--min-calls", type=int, default=LOOP_MIN_CALLS, help="calls per loop at least (was 10)")
    ap.add_argument("--loop-ms", type=float, default=DEFAULTS["loop_ms"])
    ap.add_argument("--max-s", type=float, default=DEFAULTS["loop_max_s"],
                    help="loop seconds per config after which no cycle starts")
    a = ap.parse_args(argv)
    rows = load_rows(a.root)
    print(f"{len(rows)} rows with loop samples under {a.root}")

    print("\n1. spread of a side's rounds, (max - min) / median, median [p90] over sides and configs")
    bands = [(0, 100), (100, 1000), (1000, math.inf)]
    for lo, hi in bands:
        sp = sorted((max(x) - min(x)) / st.median(x) for r in rows if lo <= r["port_us"] < hi
                    for x in (r["loop_samples"]["ref"], r["loop_samples"]["port"]))
        if sp:
            print(f"   device {lo}-{hi} µs: {100 * st.median(sp):.2f} % [{100 * sp[int(0.9 * len(sp))]:.2f} %] "
                  f"over {len(sp) // 2} configs")

    near = [r for r in rows if device_bound(r) and abs(r["ratio"] - 1) < 0.01]
    print(f"\n2. estimators on {len(near)} device-bound configs with device ratio within 1 % of 1: error = "
          f"log(estimate / device ratio)")
    for label, sel in (("all", near), ("device >= 1 ms", [r for r in near if r["port_us"] >= 1000]),
                       ("device < 1 ms", [r for r in near if r["port_us"] < 1000])):
        print(f"   {label} ({len(sel)} configs)")
        for name in estimators(sel[0]) if sel else []:
            errs = [math.log(estimators(r)[name] / r["ratio"]) for r in sel]
            e = sorted(abs(x) for x in errs)
            print(f"     {name:28s} median |e| {100 * st.median(e):.2f} %, p90 {100 * e[int(0.9 * len(e))]:.2f} %, "
                  f"rms {100 * math.sqrt(st.fmean(x * x for x in errs)):.2f} %, "
                  f"|e| > 2 %: {sum(x > 0.02 for x in e)}, under 0.97: {sum(estimators(r)[name] < 0.97 for r in sel)}")

    print("\n3. carry-over: log(side after the other kernel side / side after torch), configs "
          "with device time >= 100 µs and |effect| > 2 %")
    for r in sorted(rows, key=lambda r: -r["port_us"]):
        p, ls = predecessors(r), r["loop_samples"]
        eff = {}
        for side, other in (("ref", "port"), ("port", "ref")):
            after = [math.log(x) for i, x in enumerate(ls[side]) if p[(side, i)] == other]
            torch = [math.log(x) for i, x in enumerate(ls[side]) if p[(side, i)] == "torch"]
            if after and torch:
                eff[side] = st.fmean(after) - st.fmean(torch)
        if r["port_us"] >= 100 and any(abs(v) > 0.02 for v in eff.values()):
            print(f"   {r['op']} {r['variant'][:40]} {r['shape']}: device {r['port_us']:.0f} µs, "
                  + ", ".join(f"{s} after {o} {100 * eff[s]:+.1f} %" for s, o in (("ref", "port"), ("port", "ref"))
                              if s in eff) + f"; loop ratio {r['loop_ratio']:.3f}, device ratio {r['ratio']:.3f}")

    print(f"\n4. adaptive cycles for a 95 % half-width <= {100 * a.width:g} % ({DEFAULTS['loop_min_cycles']} to "
          f"{a.max_cycles} cycles, no "
          f"cycle started past {a.max_s:g} s), from each config's spread of paired log ratios")
    need, added, before, capped = [], [], [], 0
    for r in rows:
        k = len(r["loop_samples"])
        pr = [math.log(x / y) for x, y in zip(r["loop_samples"]["ref"], r["loop_samples"]["port"])]
        s_cycle = st.stdev(pr) / math.sqrt(k - 1)      # a cycle pairs k - 1 loops per side
        def calls(us):
            return max(a.min_calls, min(LOOP_MAX_CALLS, int(a.loop_ms * 1e3 / max(us, 1e-3))))

        n = {"ref": calls(min(r["ref_us"], r["port_us"]))}
        n["port"] = n["ref"]
        loop_s = {s: st.fmean(x) * n.get(s, calls(r.get(f"{s}_us") or x[0])) * 1e-6
                  for s, x in r["loop_samples"].items()}
        cycle_s = (k - 1) * sum(loop_s.values())
        c = DEFAULTS["loop_min_cycles"]
        while (c < a.max_cycles and (c * cycle_s) < a.max_s
               and stats.T975[c - 2] * s_cycle / math.sqrt(c) > math.log1p(a.width)):
            c += 1
        capped += stats.T975[c - 2] * s_cycle / math.sqrt(c) > math.log1p(a.width)
        need.append(c)
        before.append(len(r["loop_samples"]["ref"]) * sum(st.fmean(x) * r["loop_calls"] * 1e-6
                                                          for x in r["loop_samples"].values()))
        added.append(c * cycle_s + loop_s["torch"] - before[-1])     # + the warm-up loop
    hist = {c: need.count(c) for c in sorted(set(need))}
    top = sorted(range(len(rows)), key=lambda i: -added[i])[:3]
    print("   most added: " + "; ".join(f"{rows[i]['op']} {rows[i]['shape']} ({len(rows[i]['loop_samples'])} sides, "
                                        f"{need[i]} cycles) {before[i]:.1f} s -> {before[i] + added[i]:.1f} s"
                                        for i in top))
    print(f"   cycles: {hist}; {capped} configs stop at a cap wider than the target")
    print(f"   loop time per config before: median {st.median(before):.2f} s, total {sum(before):.0f} s; "
          f"added: median {st.median(added):+.2f} s, max {max(added):+.2f} s, total {sum(added):+.0f} s "
          f"over {len(rows)} configs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
