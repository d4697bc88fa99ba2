"""Figure: the distribution of the per-config ratio reference / port, as an ECDF.

One step curve per reading: ``ratio`` (device time as each runtime launches its kernel: what a
user gets) and, where rows have it, ``ratio_matched`` (the reference compiled under the port's
launch facts: :mod:`tileport.gpu.matched`); shaded bands at parity +-1 % and +-2 %, and a second
panel zoomed on parity +-10 %. Every config is a step, so a few far configs (launcher
specialisation, an IR difference) show as the tails they are instead of moving an operator's
geomean. It replaced the per-operator geomean strip.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from . import empty

#: shaded bands around parity (fractions), narrow first
BANDS = (0.01, 0.02)
#: (column, legend name, colour, line style) per reading
READINGS = (("ratio", "as launched", "#4C72B0", "-"), ("ratio_matched", "matched specialisation", "#DD8452", "--"))
#: half-width of the right panel's x range around parity (a fraction)
ZOOM = 0.1
#: x ticks (ratios) the log axis may show
TICKS = (0.25, 0.5, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)


def within(values: list[float], band: float) -> float:
    """Fraction of ``values`` (ratios) in ``[1 - band, 1 + band]``, edges inside; NaN for none."""
    return sum(1 - band <= v <= 1 + band for v in values) / len(values) if values else math.nan


def draw(cfg: pd.DataFrame):
    """``cfg``: rows of ``results/report/data/configs.csv`` (one per config: ``ratio``; optional
    ``ratio_matched``, absent or empty on rows timed before the matched reading existed).
    Ratios are reference / port device time (> 1: the port is faster); y the fraction of the
    reading's configs at or below x. Two panels of the same curves: every config on a log x axis,
    and parity +-:data:`ZOOM` on a linear one where the bands are readable. The legend gives each
    reading's config count and the share within +-1 % and +-2 %."""
    series = []
    for col, name, colour, style in READINGS:
        if col in cfg.columns:
            vals = sorted(float(v) for v in pd.to_numeric(cfg[col], errors="coerce") if v > 0)
            if vals:
                series.append((vals, name, colour, style))
    if not series:
        return empty("no benchmark measurement yet: the GPU stages have not run (not_run)")
    fig, (full, zoom) = plt.subplots(1, 2, figsize=(7.2, 3.2), sharey=True, gridspec_kw={"width_ratios": [1.1, 1]})
    for ax in (full, zoom):
        for band, alpha in zip(BANDS, (0.28, 0.14)):
            ax.axvspan(1 - band, 1 + band, color="#55A868", alpha=alpha, linewidth=0, label=f"parity ±{band:.0%}")
        for vals, name, colour, style in series:
            n = len(vals)
            label = (f"{name}: {n} configs, {within(vals, BANDS[0]):.0%} within ±{BANDS[0]:.0%}, "
                     f"{within(vals, BANDS[1]):.0%} within ±{BANDS[1]:.0%}")
            ax.step([vals[0]] + vals, [0.0] + [(i + 1) / n for i in range(n)], where="post", color=colour,
                    linestyle=style, linewidth=1.2, label=label)
        ax.axvline(1.0, color="#888888", linestyle=":", linewidth=0.8)
        ax.set_ylim(0, 1.0)
    lo = min(min(v[0][0] for v in series), 1 - ZOOM) / 1.02
    hi = max(max(v[0][-1] for v in series), 1 + ZOOM) * 1.02
    full.set_xscale("log")
    full.set_xlim(lo, hi)
    full.xaxis.set_major_locator(FixedLocator([t for t in TICKS if lo <= t <= hi]))
    full.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    full.xaxis.set_minor_locator(NullLocator())
    full.xaxis.set_minor_formatter(NullFormatter())
    full.set_title("every config (log scale)")
    full.set_ylabel("fraction of configs ≤ x")
    zoom.set_xlim(1 - ZOOM, 1 + ZOOM)
    zoom.xaxis.set_major_locator(FixedLocator([1 - ZOOM, 1 - ZOOM / 2, 1.0, 1 + ZOOM / 2, 1 + ZOOM]))
    zoom.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    zoom.set_title(f"zoom: parity ±{ZOOM:.0%}")
    fig.supxlabel("reference time / port time per config (> 1: port faster)", fontsize=8)
    fig.suptitle("cuTile Rust port vs cuTile Python reference, device time", fontsize=9)
    handles, labels = zoom.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False, bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    return fig
