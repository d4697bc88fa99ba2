import math

import pytest

from tileport.core import stats

# -- median --------------------------------------------------------------------------------------

def test_median_odd_and_even():
    assert stats.median([5.0, 1.0, 3.0]) == 3.0
    assert stats.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert stats.median([7.0]) == 7.0


def test_median_ignores_order_and_is_robust_to_an_outlier():
    assert stats.median([10.0, 10.0, 10.0, 1e9]) == 10.0
    assert stats.median([3.0, 1.0, 2.0]) == stats.median([1.0, 2.0, 3.0])


def test_median_of_nothing_raises():
    with pytest.raises(ValueError, match="no samples"):
        stats.median([])


# -- spread --------------------------------------------------------------------------------------

def test_spread_inclusive_quartiles():
    sp = stats.spread([1.0, 2.0, 3.0, 4.0, 5.0])
    assert sp == {"p25": 2.0, "p75": 4.0, "iqr": 2.0, "min": 1.0, "max": 5.0, "n": 5}


def test_spread_interpolates_between_samples():
    # inclusive method on [1, 3]: quartiles at 1 + 0.25*2 and 1 + 0.75*2
    sp = stats.spread([3.0, 1.0])
    assert sp["p25"] == pytest.approx(1.5)
    assert sp["p75"] == pytest.approx(2.5)
    assert sp["iqr"] == pytest.approx(1.0)
    assert (sp["min"], sp["max"], sp["n"]) == (1.0, 3.0, 2)


def test_spread_unsorted_input_same_as_sorted():
    xs = [9.0, 2.0, 7.0, 4.0, 1.0, 8.0]
    assert stats.spread(xs) == stats.spread(sorted(xs))


def test_spread_one_sample_collapses_to_that_sample():
    assert stats.spread([4.5]) == {"p25": 4.5, "p75": 4.5, "iqr": 0.0, "min": 4.5, "max": 4.5, "n": 1}


def test_spread_of_nothing_raises():
    with pytest.raises(ValueError, match="no samples"):
        stats.spread([])


# -- geomean -------------------------------------------------------------------------------------

@pytest.mark.parametrize("xs, expected", [
    ([1.0, 4.0], 2.0),
    ([2.0, 8.0], 4.0),
    ([0.81, 1.0], 0.9),
    ([1.0, 10.0, 100.0], 10.0),
    ([3.0], 3.0),
    ([0.5, 2.0], 1.0),          # reciprocal ratios cancel, unlike the arithmetic mean (1.25)
])
def test_geomean_known_values(xs, expected):
    assert stats.geomean(xs) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("xs", [[], [1.0, 0.0], [2.0, -1.0], [math.inf, 1.0], [1.0, math.nan], [-math.inf]])
def test_geomean_rejects_empty_and_non_finite_or_non_positive(xs):
    with pytest.raises(ValueError):
        stats.geomean(xs)


def test_geomean_error_names_the_bad_values():
    with pytest.raises(ValueError, match=r"-3\.0"):
        stats.geomean([1.0, -3.0])


def test_geomean_error_names_an_infinite_value():
    with pytest.raises(ValueError, match="inf"):
        stats.geomean([1.0, math.inf])


# -- paired_ratios -------------------------------------------------------------------------------

def test_paired_ratios_divide_pair_by_pair_in_order():
    assert stats.paired_ratios([10.0, 20.0, 30.0], [5.0, 40.0, 10.0]) == [2.0, 0.5, 3.0]


def test_paired_ratios_are_ref_over_port_not_port_over_ref():
    # a faster port (smaller time) gives a ratio > 1
    assert stats.paired_ratios([4.0], [2.0]) == [2.0]


def test_paired_ratios_empty_lists_pair_trivially():
    assert stats.paired_ratios([], []) == []


@pytest.mark.parametrize("ref, port", [([1.0, 2.0], [1.0]), ([1.0], [1.0, 2.0]), ([], [1.0])])
def test_paired_ratios_unequal_lengths_raise(ref, port):
    with pytest.raises(ValueError, match="unpaired"):
        stats.paired_ratios(ref, port)


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_paired_ratios_non_positive_port_time_raises(bad):
    with pytest.raises(ValueError, match="port time"):
        stats.paired_ratios([1.0, 1.0], [1.0, bad])


def test_paired_ratios_zero_reference_time_is_allowed():
    assert stats.paired_ratios([0.0], [2.0]) == [0.0]


# -- reps_for ------------------------------------------------------------------------------------

def test_reps_for_fits_budget():
    # 150 ms budget at 2000 µs per repetition = 75 reps
    assert stats.reps_for(2000.0, 150, 10, 100) == 75


def test_reps_for_truncates_not_rounds():
    assert stats.reps_for(4000.0, 150, 10, 100) == 37   # 37.5


def test_reps_for_clamps_to_upper_bound():
    assert stats.reps_for(1.0, 150, 10, 100) == 100


def test_reps_for_clamps_to_lower_bound():
    assert stats.reps_for(1e6, 150, 10, 100) == 10


def test_reps_for_bounds_are_inclusive():
    assert stats.reps_for(1500.0, 150, 10, 100) == 100
    assert stats.reps_for(15000.0, 150, 10, 100) == 10


@pytest.mark.parametrize("est", [0.0, -5.0])
def test_reps_for_no_estimate_uses_upper_bound(est):
    assert stats.reps_for(est, 150, 10, 100) == 100


# -- loop timing: balanced cycles and the ratio's interval ----------------------------------------

@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_balanced_rounds_every_side_follows_every_other_once(k):
    labels = ["ref", "port", "torch", "nv", "e", "f"][:k]
    rounds = stats.balanced_rounds(labels)
    assert rounds[0] == labels and len(rounds) == max(1, k - 1)
    assert all(sorted(r) == sorted(labels) for r in rounds)      # each round runs every side once
    seq = [s for r in rounds for s in r]
    pairs = [(seq[i - 1], seq[i]) for i in range(len(seq))]       # cyclic: cycles repeat back to back
    assert sorted(pairs) == sorted((a, b) for a in labels for b in labels if a != b)
    assert stats.balanced_rounds(labels) == rounds                      # deterministic
    with pytest.raises(ValueError, match="duplicate"):
        stats.balanced_rounds(["ref", "ref", "port"])


def test_t_quantiles_are_scipys():
    t = pytest.importorskip("scipy.stats").t
    assert stats.T975 == pytest.approx([t.ppf(0.975, df) for df in range(1, 31)], abs=1e-6)


def test_mean_interval_student_t():
    m, lo, hi = stats.mean_interval([1.0, 2.0, 3.0])
    assert m == 2.0 and hi - m == pytest.approx(4.302653 * 1.0 / math.sqrt(3)) and m - lo == pytest.approx(hi - m)
    assert stats.mean_interval([5.0]) == (5.0, -math.inf, math.inf)
    assert stats.mean_interval([2.0, 2.0]) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError):
        stats.mean_interval([])
    with pytest.raises(ValueError, match="at most 31"):
        stats.mean_interval([1.0] * 32)


def test_loop_ratio_interval_pairs_loops_within_cycles():
    # 3 cycles of 2 loops per side; clocks drift 10 % from cycle to cycle, the port 2 % slower
    ref = [100.0, 100.0, 110.0, 110.0, 121.0, 121.0, 999.0]     # a trailing incomplete cycle is left out
    port = [x * 1.02 for x in ref]
    iv = stats.loop_ratio_interval(ref, port, 2)
    assert iv["cycles"] == 3 and iv["ratio"] == pytest.approx(1 / 1.02)
    assert iv["lo"] == pytest.approx(iv["ratio"]) and iv["hi"] == pytest.approx(iv["ratio"])   # drift cancels
    # the ratio of the sides' geomeans over the complete cycles
    g = math.exp(sum(map(math.log, ref[:6])) / 6) / math.exp(sum(map(math.log, port[:6])) / 6)
    assert iv["ratio"] == pytest.approx(g)
    with pytest.raises(ValueError, match="no complete cycle"):
        stats.loop_ratio_interval([1.0], [1.0], 2)
    with pytest.raises(ValueError, match="not positive"):
        stats.loop_ratio_interval([1.0, 0.0], [1.0, 1.0], 1)
    with pytest.raises(ValueError):
        stats.loop_ratio_interval([1.0, 1.0], [1.0], 1)


def test_median_interval_is_the_order_statistic_interval():
    """Distribution-free 95 % interval of a median (Conover 1999, 3.2): ranks 2 and 9 of 10,
    40 and 61 of 100; too few values for 95 % give the range."""
    assert stats.median_interval([float(x) for x in range(10, 0, -1)]) == (5.5, 2.0, 9.0)
    assert stats.median_interval(list(range(1, 101))) == (50.5, 40, 61)
    assert stats.median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (3.0, 1.0, 5.0)
    with pytest.raises(ValueError):
        stats.median_interval([])
