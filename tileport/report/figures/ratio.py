"""Figure: per-operator geomean ratio reference / port with its 95 % bootstrap interval.

Device time (CUPTI) and, when the benchmark recorded it, loop time (per call of back-to-back
calls) side by side; the acceptance threshold and parity (1.0) as horizontal lines.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from . import empty


def draw(ops: pd.DataFrame, threshold: float):
    """``ops``: rows of ``results/report/data/operators.csv`` (``op``, ``configs``,
    ``geomean_ratio``, ``ci_low``, ``ci_high``, optional ``loop_geomean``, ``loop_ci_low``,
    ``loop_ci_high``; ALL last); ``threshold``: config.yaml's ``bench.threshold``."""
    d = ops[ops["configs"] > 0].reset_index(drop=True)
    if d.empty:
        return empty("no benchmark measurement yet: the GPU stages have not run (not_run)")
    loop = "loop_geomean" in d.columns and d["loop_geomean"].notna().any()
    series = [("geomean_ratio", "ci_low", "ci_high", "device time (CUPTI)", "#4C72B0", "o")]
    if loop:
        series.append(("loop_geomean", "loop_ci_low", "loop_ci_high", "loop time per call", "#DD8452", "s"))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.55 * len(d) + 1.5), 3.0))
    width = 0.18 if loop else 0.0
    for i, (g, lo, hi, label, colour, marker) in enumerate(series):
        xs = [k + (i - (len(series) - 1) / 2) * 2 * width for k in range(len(d))]
        y = d[g]
        err_lo = (y - d[lo]).where(d[lo].notna(), 0).clip(lower=0)
        err_hi = (d[hi] - y).where(d[hi].notna(), 0).clip(lower=0)
        ax.errorbar(xs, y, yerr=[err_lo, err_hi], fmt=marker, color=colour, capsize=3,
                    markersize=4, linewidth=1, label=label)
    ax.axhline(threshold, color="#C44E52", linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
    ax.axhline(1.0, color="#888888", linestyle=":", linewidth=0.8, label="parity")
    ax.set_xticks(range(len(d)))
    ax.set_xticklabels([f"{o}\n({int(n)})" for o, n in zip(d["op"], d["configs"])], rotation=45,
                       ha="right", rotation_mode="anchor")
    ax.set_ylabel("reference time / port time\n(geomean, 95 % bootstrap CI)")
    ax.set_title("cuTile Rust port vs cuTile Python reference (> 1: port faster)")
    ax.legend(loc="best", frameon=False, ncol=2)
    fig.tight_layout()
    return fig
