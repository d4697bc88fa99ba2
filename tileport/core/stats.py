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


def median_interval(xs: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """``(median, lo, hi)``: the median of ``xs`` and its distribution-free confidence interval
    of at least ``level``: order statistics x(j) and x(n+1-j) with j the largest rank whose
    two-sided binomial(n, 1/2) tail stays within 1 - level (Conover, Practical Nonparametric
    Statistics, 3rd ed., 1999, section 3.2). ``lo = min, hi = max`` when n is too small for
    ``level`` (n < 6 at 95 %). Raises ValueError on no values."""
    if not xs:
        raise ValueError("median_interval of no values")
    v, n = sorted(xs), len(xs)
    j, tail = 0, 0.0
    while True:         # grow j while P(B <= j) on both sides stays within 1 - level
        nxt = tail + math.comb(n, j) / 2 ** n
        if 2 * nxt > 1 - level or j + 1 > n // 2:
            break
        tail, j = nxt, j + 1
    lo, hi = (v[j - 1], v[n - j]) if j else (v[0], v[-1])
    return statistics.median(v), lo, hi


def reps_for(est_us: float, budget_ms: float, lo: int, hi: int) -> int:
    """Repetitions that fit ``budget_ms`` at ``est_us`` per repetition, clamped to [lo, hi]."""
    if est_us <= 0:
        return hi
    return max(lo, min(hi, int(budget_ms * 1000.0 / est_us)))


#: two-sided 95 % Student t quantiles t(0.975, df) for df = 1..30 (``scipy.stats.t.ppf(0.975, df)``;
#: kept as constants because the GPU node that runs the benchmark has no scipy:
#: ``tests/test_stats.py`` checks them against scipy)
T975 = (12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
        2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922,
        2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
        2.048407, 2.045230, 2.042272)


def balanced_rounds(labels: list[str]) -> list[list[str]]:
    """The rounds of one *cycle* of the loop timing: ``len(labels) - 1`` rounds, each an order of
    all ``labels``, such that in the cycle's sequence taken cyclically (the last loop of a cycle
    precedes the first of the next) every side directly follows every other side exactly once.

    Why: back to back, a loop inherits the clocks and temperature its predecessor left (a
    power-hungry GEMM slows whatever runs next); a plain rotation of ``[ref, port, torch]``
    always puts ``port`` after ``ref`` and ``ref`` after ``torch``, so the heavier side's
    successor pays for it. Balancing first-order carry-over is the crossover design of
    Williams (1949), "Experimental designs balanced for the estimation of residual effects of
    treatments", Aust. J. Sci. Res. A 2:149; here as an Eulerian circuit of the complete directed
    graph on the sides, cut into rounds (found by depth-first search; the first round is
    ``labels`` as given). Among those, the first in which the first two labels (the reference
    and the port) have equal sums of positions in the cycle, so that a clock drift linear in
    time over the cycle cancels in their ratio too (for 3 and 4 sides one exists). Deterministic.
    ``[["a", "b"]]`` for two sides, ``[labels]`` for one. Raises ValueError for duplicate labels."""
    k = len(labels)
    if len(set(labels)) != k:
        raise ValueError(f"balanced_rounds: duplicate sides in {labels}")
    if k < 3:
        return [list(labels)]
    first: list = []

    def extend(seq: list[str], used: frozenset) -> list[str] | None:
        if len(seq) == k * (k - 1):     # closing the circuit: last -> first must be new too
            if seq[-1] == seq[0] or (seq[-1], seq[0]) in used:
                return None
            first.append(first[0] if first else seq)
            pos = [sum(i for i, x in enumerate(seq) if x == lab) for lab in labels[:2]]
            return seq if pos[0] == pos[1] else None
        rnd = seq[len(seq) // k * k:]
        for s in labels:
            if s in rnd or s == seq[-1] or (seq[-1], s) in used:
                continue
            found = extend(seq + [s], used | {(seq[-1], s)})
            if found:
                return found
        return None

    seq = extend(list(labels), frozenset(zip(labels, labels[1:]))) or (first[0] if first else None)
    if seq is None:     # pragma: no cover - exists for every k >= 2 (tests check k <= 6)
        raise ValueError(f"balanced_rounds: no balanced cycle for {labels}")
    return [seq[i:i + k] for i in range(0, len(seq), k)]


def mean_interval(xs: list[float]) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the mean of ``xs`` and its two-sided 95 % Student t confidence
    interval, ``mean ± t(0.975, n-1) · s / sqrt(n)`` (``s``: sample standard deviation).
    ``lo = -inf, hi = inf`` for one value (no spread to judge). Raises ValueError on no values
    or more than 31 (:data:`T975` ends at 30 degrees of freedom)."""
    n = len(xs)
    if n == 0:
        raise ValueError("mean_interval of no values")
    if n - 1 > len(T975):
        raise ValueError(f"mean_interval: {n} values, at most {len(T975) + 1}")
    m = statistics.fmean(xs)
    if n == 1:
        return m, -math.inf, math.inf
    h = T975[n - 2] * statistics.stdev(xs) / math.sqrt(n)
    return m, m - h, m + h


def cycle_log_ratios(ref: list[float], port: list[float], per_cycle: int) -> list[float]:
    """Per cycle of the loop timing, log(geomean of ref's loop times / geomean of port's) over
    the cycle's ``per_cycle`` loops per side (times in µs, in the order they ran; a trailing
    incomplete cycle is left out). Raises ValueError for unequal lengths, ``per_cycle`` < 1 or
    a time that is not positive."""
    if len(ref) != len(port) or per_cycle < 1:
        raise ValueError(f"cycle_log_ratios: {len(ref)} ref vs {len(port)} port loops, {per_cycle} per cycle")
    if any(not (x > 0) for x in ref + port):
        raise ValueError("cycle_log_ratios: a loop time is not positive")
    out = []
    for c in range(len(ref) // per_cycle):
        s = slice(c * per_cycle, (c + 1) * per_cycle)
        out.append(statistics.fmean(math.log(a) - math.log(b) for a, b in zip(ref[s], port[s])))
    return out


def loop_ratio_interval(ref: list[float], port: list[float], per_cycle: int) -> dict:
    """The loop ratio ref / port over complete cycles (:func:`cycle_log_ratios`): ``ratio``
    (the geomean of the cycles' ratios = geomean of ref's loop times / geomean of port's),
    ``lo`` / ``hi`` (the 95 % t interval of :func:`mean_interval` on the cycles' log ratios,
    back-transformed; 0 / inf for one cycle), ``cycles``. The cycle is the unit: each is
    carry-over balanced (:func:`balanced_rounds`) and short, so slow clock drift and a slow
    round stay inside a cycle's pair. Raises what :func:`cycle_log_ratios` raises, ValueError
    for no complete cycle."""
    logs = cycle_log_ratios(ref, port, per_cycle)
    if not logs:
        raise ValueError("loop_ratio_interval: no complete cycle")
    m, lo, hi = mean_interval(logs)
    return {"ratio": math.exp(m), "lo": math.exp(lo), "hi": math.exp(hi), "cycles": len(logs)}
