"""Click feedback from a project's own Kafka topic (``[loops.sources] clicks_topic``): the one record the
``page_clicks`` sink reads (ClickRecord, the crawler's record too), what it refuses, and how a malformed record ends."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest

from focuscrawl.ephemeral.tables import PAGE_CLICKS, ClickRecord, click_row
from focuscrawl.lake.delta_sink import RecordRejected, StreamRecord

GOOD = {"source_url": "https://shop.example.org/new", "page_url": "https://shop.example.org/p/1",
        "created_at": 1_700_000_000_000_000, "observed_at": 1_700_000_360_000_000, "clicks": 7,
        "counted_from": 1_700_000_060_000_000}


def record(value) -> StreamRecord:
    return StreamRecord("shop.clicks", 0, 0, value if value is None or isinstance(value, bytes) else json.dumps(value).encode())


def test_the_record_is_the_tables_row():
    """One format: the record's fields are the table's columns, required exactly where the column is not nullable."""
    hints = typing.get_type_hints(ClickRecord)
    fields = {f.name: type(None) not in typing.get_args(hints[f.name]) for f in dataclasses.fields(ClickRecord)}
    assert fields == {c.name: not c.nullable for c in PAGE_CLICKS.columns}


def test_a_well_formed_record_is_its_row_and_unknown_keys_are_ignored():
    assert click_row(record({**GOOD, "campaign": "x"})) == GOOD
    assert click_row(record({k: v for k, v in GOOD.items() if k != "counted_from"}))["counted_from"] is None


# (case, value, fragment of the reason the dead letter carries)
MALFORMED = [
    ("not JSON", b"clicks=7", "not JSON"),
    ("a tombstone", None, "no value"),
    ("a JSON list", [GOOD], "expected a JSON object"),
    ("required key missing", {k: v for k, v in GOOD.items() if k != "page_url"}, "ClickRecord.page_url: missing"),
    ("required key null", {**GOOD, "source_url": None}, "ClickRecord.source_url: expected a string"),
    ("time as ISO text", {**GOOD, "observed_at": "2026-12-03T09:00:00Z"}, "ClickRecord.observed_at: expected an integer"),
    ("time with a fraction", {**GOOD, "created_at": 1_700_000_000.5}, "ClickRecord.created_at: expected an integer"),
    ("fractional clicks", {**GOOD, "clicks": 2.5}, "ClickRecord.clicks: expected an integer"),
    ("clicks as text", {**GOOD, "clicks": "7"}, "ClickRecord.clicks: expected an integer"),
    ("negative clicks", {**GOOD, "clicks": -1}, "ClickRecord.clicks: -1 is negative"),
]


@pytest.mark.parametrize("case,value,reason", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_record_is_refused_naming_its_fault(case, value, reason):
    with pytest.raises(RecordRejected, match="^not a page_clicks record: ") as refused:
        click_row(record(value))
    assert reason in str(refused.value), case
