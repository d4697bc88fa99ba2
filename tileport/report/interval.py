"""95 % bootstrap interval of a geometric mean of ratios (scipy.stats.bootstrap).

A geomean of ratios r_i is exp(mean(log r_i)), so its interval is exp of the bootstrap interval
of the mean of the logs: resampling the configs (with replacement) and taking the geomean of each
resample is the same statistic. The default method is BCa (bias-corrected and accelerated;
Efron & Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 14), which scipy computes by
default; ``percentile`` is the plain percentile interval. Resampling is seeded, so the same
ratios always give the same interval and a rerun of the report changes nothing.
"""
from __future__ import annotations

import math
import warnings

SEED = 20261130
RESAMPLES = 9999


def geomean_interval(ratios: list[float], confidence: float = 0.95, method: str = "BCa",
                     n_resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float, float] | None:
    """``(geomean, low, high)`` of positive ``ratios`` (dimensionless, e.g. reference µs / port
    µs per config) with a ``confidence`` bootstrap interval over the configs; ``None`` for fewer
    than two ratios (no interval: one config is not a sample). Identical ratios give a
    zero-width interval ``(g, g, g)``; a BCa interval that scipy cannot compute (degenerate
    resamples) falls back to the percentile interval.

    Raises:
        ValueError: a ratio is not a finite positive number.
    """
    import numpy as np
    from scipy import stats

    xs = [float(r) for r in ratios]
    bad = [r for r in xs if not (r > 0) or math.isinf(r)]
    if bad:
        raise ValueError(f"geomean interval needs finite positive ratios, got {bad}")
    if len(xs) < 2:
        return None
    logs = np.log(np.asarray(xs))
    g = float(np.exp(logs.mean()))
    if np.ptp(logs) == 0:
        return g, g, g
    lo = hi = float("nan")
    for m in dict.fromkeys([method, "percentile"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # scipy warns on degenerate BCa resamples
            res = stats.bootstrap((logs,), np.mean, confidence_level=confidence, method=m,
                                  n_resamples=n_resamples, rng=np.random.default_rng(seed))
        lo, hi = (float(x) for x in res.confidence_interval)
        if math.isfinite(lo) and math.isfinite(hi):
            break
    return g, math.exp(lo), math.exp(hi)
