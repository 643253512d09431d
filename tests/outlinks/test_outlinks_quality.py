"""The Great Expectations gate on the snapshot and feature tables."""

from __future__ import annotations

import pandas as pd
import pytest

from focuscrawl.outlinks.experiment import prepare
from focuscrawl.outlinks.quality import DataQualityError, check_features, check_snapshots
from focuscrawl.outlinks.synthetic import generate_snapshots


@pytest.fixture(scope="module")
def snapshots():
    return generate_snapshots(n_pages=60, n_periods=5, n_topics=5, n_sites=5, seed=3)


def test_clean_tables_pass(snapshots):
    check_snapshots(snapshots)
    check_features(prepare(snapshots, history_size=2, k=5, dimensions=8), history_size=2)


def test_corrupted_snapshots_fail_and_say_why(snapshots):
    bad = snapshots.copy()
    bad.loc[3, "url"] = "ftp//broken"
    bad.loc[5, "period"] = -1
    bad = pd.concat([bad, bad.iloc[[7]]])  # the same (url, period) twice
    with pytest.raises(DataQualityError) as err:
        check_snapshots(bad)
    msg = str(err.value)
    assert "failed 3 expectation(s)" in msg
    assert "expect_column_values_to_match_regex" in msg and "ftp//broken" in msg
    assert "expect_compound_columns_to_be_unique" in msg and "expect_column_values_to_be_between" in msg


def test_missing_column_and_empty_table_fail(snapshots):
    with pytest.raises(DataQualityError, match="missing columns: \\['content_digest'\\]"):
        check_snapshots(snapshots.drop(columns=["content_digest"]))
    with pytest.raises(DataQualityError, match="empty"):
        check_snapshots(snapshots.iloc[:0])
