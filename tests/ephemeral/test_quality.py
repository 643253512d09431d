"""Dynamic and overall quality of seed 001, section 2, on hand-computed values."""

import pytest

from focuscrawl.ephemeral.quality import dynamic_quality, overall_quality


def test_dynamic_quality_is_profit_per_second_in_the_trailing_window():
    times, profits = [3.0, 1.0, 2.0, 10.0], [3.0, 1.0, 2.0, 4.0]
    q = dynamic_quality(times, profits, 2.0, [0.5, 3.0, 9.0, 11.0])
    assert list(q) == [0.0, 2.5, 0.0, 2.0]  # (2+3)/2 at t=3, 4/2 at t=11


def test_overall_quality_over_the_window():
    assert overall_quality([0.5, 1.0, 2.0, 10.0], [1.0, 1.0, 2.0, 4.0], 0.5, 4.5) == pytest.approx(3.0 / 4.0)
    with pytest.raises(ValueError):
        overall_quality([1.0], [1.0], 2.0, 2.0)
