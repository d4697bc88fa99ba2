"""The README table of the configs a call timed: python table.py OPS_DIR DAY, DAY the prefix of
the rows' timed_at (2026-12-08). Geomeans with the 95 % bootstrap interval of
tileport.report.interval.geomean_interval."""

import json
import sys
from pathlib import Path

from tileport.report.interval import geomean_interval


def fmt(ratios: list[float]) -> str:
    g = geomean_interval(ratios) if len(ratios) > 1 else None
    return f"{g[0]:.3f} [{g[1]:.3f}, {g[2]:.3f}]" if g else (f"{ratios[0]:.3f}" if ratios else "-")


def shape_text(shape) -> str:
    return shape if isinstance(shape, str) else "x".join(map(str, shape))


def main(ops_dir: Path, day: str) -> None:
    print("| operator | configs timed today / of the manifest | as launched | matched | loop | lowest matched |")
    print("|---|---|---|---|---|---|")
    for d in sorted(p for p in ops_dir.iterdir() if (p / "bench.json").exists()):
        doc = json.loads((d / "bench.json").read_text())
        det = doc["details"]
        rows = [r for r in det["rows"] if str(r.get("timed_at", "")).startswith(day) and not r.get("error")]
        if not rows:
            print(f"| {d.name} | 0 / {det.get('configs_total')} | | | | {doc['verdict']} |")
            continue

        def values(key):
            return [r[key] for r in rows if isinstance(r.get(key), (int, float)) and r[key] > 0]

        matched = [r for r in rows if isinstance(r.get("ratio_matched"), (int, float))]
        low = min(matched, key=lambda r: r["ratio_matched"], default=None)
        lowest = (f"{low['ratio_matched']:.3f} ({low['kernel']} {low['variant'].split('-')[0]} "
                  f"{shape_text(low['shape'])})") if low else "-"
        print(f"| {d.name} | {len(rows)} / {det.get('configs_total')} | {fmt(values('ratio'))} | "
              f"{fmt(values('ratio_matched'))} | {fmt(values('loop_ratio'))} | {lowest} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
