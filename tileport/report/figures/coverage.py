"""Figure: coverage matrix, kernels (rows, grouped by operator) x stages (analyze ... bench),
each cell coloured by the worst verdict over the kernel's variants and labelled
``passed/variants``: how much of the input is ported, and where the rest stops."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from ..data import CLASSES, STAGES
from . import empty

COLOURS = {"pass": "#55A868", "notes": "#A8D5A2", "below": "#F2C14E", "fail": "#C44E52",
           "blocked": "#E68A3A", "error": "#7A1F2B", "not_run": "#D9D9D9"}
LABELS = {"pass": "PASS / ALL_PASS / DONE", "notes": "PASS_WITH_NOTES / REF_DEFECT", "below": "below threshold",
          "fail": "FAIL", "blocked": "BLOCKED", "error": "ERROR", "not_run": "not run / missing"}


def draw(cov: pd.DataFrame):
    """``cov``: rows of ``results/report/data/coverage.csv`` (``op``, ``kernel``, ``stage``,
    ``verdict`` (a class of :data:`tileport.report.data.CLASSES`), ``passed``, ``variants``)."""
    if cov.empty:
        return empty("no kernel in summary.csv")
    stages = list(STAGES.values())
    keys = list(dict.fromkeys(zip(cov["op"], cov["kernel"])))
    idx = {k: i for i, k in enumerate(keys)}
    cls_ix = {c: i for i, c in enumerate(CLASSES)}
    grid = [[cls_ix["not_run"]] * len(stages) for _ in keys]
    text = [[""] * len(stages) for _ in keys]
    for r in cov.itertuples():
        i, j = idx[(r.op, r.kernel)], stages.index(r.stage)
        grid[i][j] = cls_ix[r.verdict]
        text[i][j] = f"{r.passed}/{r.variants}" if r.variants else ""
    n = len(keys)
    fig, ax = plt.subplots(figsize=(5.8, max(2.2, 0.2 * n + 1.4)))
    cmap = ListedColormap([COLOURS[c] for c in CLASSES])
    ax.pcolormesh(grid, cmap=cmap, vmin=-0.5, vmax=len(CLASSES) - 0.5, edgecolors="white", linewidth=0.6)
    fs = 6 if n <= 40 else 4.5
    for i in range(n):
        for j in range(len(stages)):
            if text[i][j]:
                dark = CLASSES[grid[i][j]] in ("fail", "error", "pass")
                ax.text(j + 0.5, i + 0.5, text[i][j], ha="center", va="center", fontsize=fs,
                        color="white" if dark else "black")
    ax.set_xticks([j + 0.5 for j in range(len(stages))])
    ax.set_xticklabels(stages, rotation=35, ha="left", rotation_mode="anchor")
    ax.xaxis.tick_top()
    ax.set_yticks([i + 0.5 for i in range(n)])
    ax.set_yticklabels([f"{op} / {k}" if k != "-" else f"{op} (no kernel)" for op, k in keys], fontsize=fs + 0.5)
    ax.set_ylim(n, 0)
    # operator groups: a rule between consecutive operators
    for i in range(1, n):
        if keys[i][0] != keys[i - 1][0]:
            ax.axhline(i, color="black", linewidth=0.8)
    ax.tick_params(length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    used = [c for c in CLASSES if any(CLASSES[v] == c for row in grid for v in row)]
    ax.legend(handles=[Patch(color=COLOURS[c], label=LABELS[c]) for c in used],
              loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=min(4, len(used)), frameon=False)
    ops = len({k[0] for k in keys})
    ax.set_title(f"{n} kernels of {ops} operators x stages (cell: variants passing / variants)", pad=38)
    fig.tight_layout()
    return fig
