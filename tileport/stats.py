"""Statistics of the benchmark: medians, spreads, paired ratios, geomeans (stdlib ``statistics``).

All times are in microseconds (µs). A *ratio* is reference time / port time, so > 1 means the
port is faster; ratios aggregate by the geometric mean (Fleming & Wallace, "How not to lie
with statistics: the correct way to summarize benchmark results", CACM 29(3), 1986).
"""
from __future__ import annotations

import math
import statistics


def median(xs: list[float]) -> float:
    """Median of a non-empty list of times (µs). Raises ValueError on an empty list."""
    if not xs:
        raise ValueError("median of no samples")
    return statistics.median(xs)


def spread(xs: list[float]) -> dict:
    """``{"p25", "p75", "iqr", "min", "max", "n"}`` of a non-empty sample (µs); quartiles by
    ``statistics.quantiles(method="inclusive")`` (equal to min/max for one sample)."""
    if not xs:
        raise ValueError("spread of no samples")
    if len(xs) == 1:
        q1 = q3 = xs[0]
    else:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return {"p25": q1, "p75": q3, "iqr": q3 - q1, "min": min(xs), "max": max(xs), "n": len(xs)}


def geomean(xs: list[float]) -> float:
    """Geometric mean of positive numbers. Raises ValueError on an empty list or a value <= 0."""
    if not xs:
        raise ValueError("geomean of no values")
    if any(not (x > 0) or math.isinf(x) for x in xs):
        bad = [x for x in xs if not (x > 0) or math.isinf(x)]
        raise ValueError(f"geomean needs finite positive values, got {bad}")
    return statistics.geometric_mean(xs)


def paired_ratios(ref: list[float], port: list[float]) -> list[float]:
    """Per-repetition ratios ref[i] / port[i] of samples taken pair by pair (interleaved).

    Raises ValueError when the lists differ in length or a port time is not positive."""
    if len(ref) != len(port):
        raise ValueError(f"unpaired samples: {len(ref)} reference vs {len(port)} port")
    if any(p <= 0 for p in port):
        raise ValueError("a port time is not positive")
    return [r / p for r, p in zip(ref, port)]


def reps_for(est_us: float, budget_ms: float, lo: int, hi: int) -> int:
    """Repetitions that fit ``budget_ms`` at ``est_us`` per repetition, clamped to [lo, hi]."""
    if est_us <= 0:
        return hi
    return max(lo, min(hi, int(budget_ms * 1000.0 / est_us)))
