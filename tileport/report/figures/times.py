"""Figure: device time of every perf config, reference vs port vs torch, log scale, one panel
per operator."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import LogFormatter

from . import SIDE_COLOURS, SIDE_NAMES, empty


def draw(cfg: pd.DataFrame):
    """``cfg``: rows of ``results/report/data/configs.csv`` (``op``, ``kernel``, ``variant``,
    ``shape``, ``ref_us``, ``port_us``, ``torch_us``: median CUPTI device time per call, µs)."""
    if cfg.empty:
        return empty("no benchmark measurement yet: the GPU stages have not run (not_run)")
    ops = list(dict.fromkeys(cfg["op"]))
    ncols = min(3, len(ops))
    nrows = math.ceil(len(ops) / ncols)
    widest = max(len(cfg[cfg["op"] == o]) for o in ops)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False,
                             figsize=(ncols * max(2.6, 0.32 * widest + 0.8), nrows * 2.9))
    sides = ("ref", "port", "torch")
    w = 0.27
    for ax, op in zip(axes.flat, ops):
        d = cfg[cfg["op"] == op].reset_index(drop=True)
        for i, s in enumerate(sides):
            ax.bar([k + (i - 1) * w for k in range(len(d))], d[f"{s}_us"], width=w,
                   color=SIDE_COLOURS[s], label=SIDE_NAMES[s])
        ax.set_yscale("log")
        lo = min(d[f"{s}_us"].min() for s in sides)
        ax.set_ylim(bottom=lo * 0.7)
        ax.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
        ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
        ax.set_title(op)
        ax.set_xticks(range(len(d)))
        multi = d["kernel"].nunique() > 1
        ax.set_xticklabels([(f"{k}\n" if multi else "") + f"{v}\n{s}"
                            for k, v, s in zip(d["kernel"], d["variant"], d["shape"])],
                           rotation=60, ha="right", rotation_mode="anchor", fontsize=5)
        ax.set_ylabel("device time per call (µs)")
    for ax in list(axes.flat)[len(ops):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return fig
