"""Figure: host overhead per call, per operator: wall time of back-to-back calls minus device
time (``bench``'s ``*_host_overhead_us``), the port's next to the reference's ``ct.launch``."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from . import SIDE_COLOURS, SIDE_NAMES, empty


def draw(cfg: pd.DataFrame):
    """``cfg``: rows of ``results/report/data/configs.csv`` with ``ref_host_overhead_us`` and
    ``port_host_overhead_us`` (µs per call). Bars: median over the operator's configs; whiskers:
    minimum and maximum."""
    if cfg.empty:
        return empty("no benchmark measurement yet: the GPU stages have not run (not_run)")
    ops = list(dict.fromkeys(cfg["op"]))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(ops) + 1.5), 3.0))
    w = 0.38
    for i, s in enumerate(("ref", "port")):
        col = f"{s}_host_overhead_us"
        g = cfg.groupby("op", sort=False)[col]
        med, lo, hi = g.median().reindex(ops), g.min().reindex(ops), g.max().reindex(ops)
        xs = [k + (i - 0.5) * w for k in range(len(ops))]
        ax.bar(xs, med, width=w, color=SIDE_COLOURS[s], label=SIDE_NAMES[s],
               yerr=[(med - lo).clip(lower=0), (hi - med).clip(lower=0)], capsize=2,
               error_kw={"linewidth": 0.8})
    ax.set_yscale("symlog", linthresh=1.0)       # overheads span 0 to hundreds of µs
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels(ops, rotation=45, ha="right", rotation_mode="anchor")
    ax.set_ylabel("host overhead per call (µs, symlog)\nmedian over configs, min-max")
    ax.set_title("Host time per call beyond device time")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig
