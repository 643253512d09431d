"""The snapshot and feature tables pass their spec-derived Great Expectations suites
(focuscrawl.lake.quality, keyed on url and period as the outlinks DAGs gate them), and a corrupted
snapshot table fails naming each broken expectation."""

from __future__ import annotations

import pyarrow as pa
import pytest

from focuscrawl.outlinks.experiment import prepare
from focuscrawl.outlinks.synthetic import generate_snapshots
from focuscrawl.outlinks.tables import FEATURES, SNAPSHOTS
from focuscrawl.lake.quality import DataQualityError, validate_table

PAGE_PERIOD = ("url", "period")


@pytest.fixture(scope="module")
def snapshots():
    return generate_snapshots(n_pages=40, n_periods=6, n_topics=4, n_sites=4, words_per_page=30, seed=3)


def write(path, frame, spec):
    """Write ``frame`` as a careless producer would: the spec's types, but no column declared required."""
    from deltalake import write_deltalake

    schema = pa.schema([f.with_nullable(True) for f in spec.arrow_schema()])
    write_deltalake(str(path), pa.Table.from_pandas(frame[spec.column_names], schema=schema, preserve_index=False),
                    mode="overwrite")
    return str(path)


def test_clean_tables_pass(snapshots, tmp_path):
    result = validate_table(write(tmp_path / "snap", snapshots, SNAPSHOTS), SNAPSHOTS, PAGE_PERIOD)
    assert (result.success, result.row_count) == (True, 240)
    features = prepare(snapshots, history_size=4, k=5, dimensions=8)
    result = validate_table(write(tmp_path / "feat", features, FEATURES), FEATURES, PAGE_PERIOD)
    # periods 5 (observed) and 6 (next, targets still unknown) have a full 4-interval history
    assert (result.success, result.row_count) == (True, 80)


def test_corrupted_snapshots_fail_and_say_why(snapshots, tmp_path):
    bad = snapshots.copy()
    bad.loc[3, "url"] = None
    bad.loc[7, "period"] = bad.loc[8, "period"]
    bad.loc[7, "url"] = bad.loc[8, "url"]  # the same page twice in one period
    with pytest.raises(DataQualityError) as err:
        validate_table(write(tmp_path / "snap", bad, SNAPSHOTS), SNAPSHOTS, PAGE_PERIOD)
    msg = str(err.value)
    assert "page_snapshots failed 2 of" in msg
    assert "expect_column_values_to_not_be_null(column='url'): 1 rows" in msg
    assert "expect_compound_columns_to_be_unique(column_list=['url', 'period']): 2 rows" in msg
