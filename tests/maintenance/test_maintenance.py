"""OPTIMIZE + VACUUM of one Delta table with delta-rs (issue 9, point 3)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from focuscrawl.lake.maintenance import maintain_table


def test_compacts_small_appends_and_keeps_rows(tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        write_deltalake(path, pa.table({"n": [i]}), mode="append")
    report = maintain_table("t", path)
    assert (report.files_removed, report.files_added, report.version) == (3, 1, 3)
    # the 3 replaced files are younger than 7 days: VACUUM must keep them for time travel
    assert report.files_vacuumed == 0
    assert len(DeltaTable(path).file_uris()) == 1
    assert sorted(DeltaTable(path).to_pyarrow_table()["n"].to_pylist()) == [0, 1, 2]
    assert sorted(DeltaTable(path, version=2).to_pyarrow_table()["n"].to_pylist()) == [0, 1, 2]


def test_refuses_retention_below_seven_days(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"n": [1]}))
    with pytest.raises(ValueError, match="below the 168 h minimum"):
        maintain_table("t", path, retention_hours=24)
