"""The bounds the coverage scripts in benchmarks/ report, against slow references."""

import itertools
import pathlib
import sys

import numpy as np
import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def nested():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import nested_coverage
    finally:
        sys.path.remove(str(BENCHMARKS))
    return nested_coverage


def _coverage(scores, multiplier, z):
    return np.mean(scores <= z * multiplier)


def test_band_window_holds_exactly_the_multipliers_whose_coverage_is_in_the_band(nested):
    rng = np.random.default_rng(0)
    low_band, high_band = nested.TARGET
    for _ in range(200):
        scores = np.abs(rng.standard_t(3, size=rng.integers(3, 120)))
        low, high = nested.band_window(scores)
        # A fine scan of multipliers: in the band exactly inside [low, high).
        grid = np.linspace(0, 1.2 * scores.max() / nested.Z, 4001)
        in_band = np.array([low_band <= _coverage(scores, m, nested.Z) <= high_band
                            for m in grid])
        if np.isnan(low):
            assert not in_band.any()
            continue
        inside = (grid >= low * (1 + 1e-9)) & (grid < high * (1 - 1e-9))
        edge = np.isclose(grid, low) | np.isclose(grid, high)
        assert np.array_equal(in_band[~edge], inside[~edge])


def _best_by_every_subset(records):
    """The most records a non-decreasing sequence of multipliers can put in their windows."""
    order = sorted(records, key=lambda r: r["nested_need"])
    best = 0
    for chosen in itertools.product((False, True), repeat=len(order)):
        level, ok = -np.inf, True
        for record, take in zip(order, chosen):
            if take and np.isfinite(record["band_low"]):
                level = max(level, record["band_low"])
                ok &= level < record["band_high"]
            elif take:
                ok = False
        if ok:
            best = max(best, sum(chosen))
    return best


def test_monotone_bound_matches_every_subset_on_small_cases(nested):
    rng = np.random.default_rng(1)
    for _ in range(300):
        records = []
        for _ in range(rng.integers(1, 8)):
            low = rng.uniform(0, 3)
            high = np.inf if rng.random() < 0.1 else low + rng.uniform(0.01, 1)
            if rng.random() < 0.1:
                low = high = np.nan  # a split no multiplier puts in the band
            records.append({"nested_need": rng.uniform(0, 3), "band_low": low,
                            "band_high": high})
        assert nested.monotone_bound(records) == _best_by_every_subset(records)


def test_monotone_bound_counts_windows_that_widths_rising_with_the_need_cannot_all_reach(nested):
    # The split with the larger nested need needs the narrower width: one of the two.
    records = [{"nested_need": 1.0, "band_low": 1.2, "band_high": 1.5},
               {"nested_need": 2.0, "band_low": 0.8, "band_high": 1.1}]
    assert nested.monotone_bound(records) == 1
    records[1]["band_high"] = 1.3
    assert nested.monotone_bound(records) == 2
