"""The exactly-once Delta sink on a real delta-rs table (no Kafka): replays add nothing, bad records dead-letter."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable

import hashlib

from focuscrawl.lake.delta_sink import DEAD_LETTER_TABLE, LINEAGE_COLUMNS, DeltaSink, StreamRecord
from focuscrawl.lake.tables import Column, TableSpec

SPEC = TableSpec(
    "sink_test",
    "rows for the sink tests",
    (Column("user", pa.string(), "who", nullable=False), Column("n", pa.int64(), "a number"), *LINEAGE_COLUMNS),
)


def rec(partition: int, offset: int, value) -> StreamRecord:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return StreamRecord("posts", partition, offset, raw, key=b"k", timestamp_ms=1000 + offset)


@pytest.fixture
def sink(tmp_path):
    return DeltaSink(str(tmp_path / "t"), SPEC, "g1", dead_letter_uri=str(tmp_path / "dl"))


def rows(uri: str) -> list[dict]:
    return sorted(DeltaTable(uri).to_pyarrow_table().to_pylist(), key=lambda r: (r["kafka_partition"], r["kafka_offset"]))


def test_new_table_takes_schema_comments_and_no_positions(sink, tmp_path):
    assert sink.positions("posts", [0, 1]) == {0: None, 1: None}
    dt = DeltaTable(str(tmp_path / "t"))
    assert dt.metadata().description == SPEC.comment
    assert dt.metadata().name == "sink_test"
    assert [f.name for f in dt.schema().fields] == SPEC.column_names
    assert dt.schema().fields[0].metadata["comment"] == "who"


def test_one_commit_carries_one_transaction_per_partition(sink, tmp_path):
    batch = [rec(0, 0, {"user": "a", "n": 1}), rec(0, 1, {"user": "b", "n": 2}), rec(3, 7, {"user": "c"})]
    result = sink.write(batch)
    assert (result.written, result.dead_lettered, result.skipped) == (3, 0, 0)
    assert result.positions == {("posts", 0): 2, ("posts", 3): 8}
    dt = DeltaTable(str(tmp_path / "t"))
    assert dt.version() == 1  # create + one append
    assert sink.positions("posts", [0, 1, 3]) == {0: 2, 1: None, 3: 8}
    assert [(r["user"], r["n"], r["kafka_partition"], r["kafka_offset"]) for r in rows(str(tmp_path / "t"))] == [
        ("a", 1, 0, 0), ("b", 2, 0, 1), ("c", None, 3, 7)]


def test_replayed_batch_adds_nothing_and_overlap_adds_only_new(sink, tmp_path):
    batch = [rec(0, i, {"user": f"u{i}", "n": i}) for i in range(5)]
    sink.write(batch)
    again = sink.write(batch)
    assert (again.written, again.skipped) == (0, 5)
    assert DeltaTable(str(tmp_path / "t")).version() == 1  # a full replay makes no commit
    overlap = sink.write([rec(0, i, {"user": f"u{i}", "n": i}) for i in range(3, 8)])
    assert (overlap.written, overlap.skipped) == (3, 2)
    assert [r["kafka_offset"] for r in rows(str(tmp_path / "t"))] == list(range(8))
    assert sink.positions("posts", [0]) == {0: 8}


def test_positions_are_per_consumer_group(sink, tmp_path):
    sink.write([rec(0, 0, {"user": "a"})])
    other = DeltaSink(str(tmp_path / "t"), SPEC, "g2", dead_letter_uri=str(tmp_path / "dl"))
    assert other.positions("posts", [0]) == {0: None}


def test_bad_records_go_to_dead_letter_table_once(sink, tmp_path):
    batch = [
        rec(1, 10, {"user": "ok", "n": 1}),
        rec(1, 11, b"{not json"),
        rec(1, 12, {"n": 3}),  # required user missing
        rec(1, 13, {"user": "x", "n": "many"}),  # wrong type
        rec(1, 14, [1, 2]),
        StreamRecord("posts", 1, 15, None),  # tombstone
        rec(1, 16, {"user": "ok2", "n": 2}),
    ]
    result = sink.write(batch)
    assert (result.written, result.dead_lettered) == (2, 5)
    assert [r["user"] for r in rows(str(tmp_path / "t"))] == ["ok", "ok2"]
    dead = rows(str(tmp_path / "dl"))
    assert [r["kafka_offset"] for r in dead] == [11, 12, 13, 14, 15]
    assert dead[0]["payload"] == b"{not json" and dead[0]["key"] == b"k"
    assert (dead[0]["payload_sha256"], dead[0]["payload_size"]) == (hashlib.sha256(b"{not json").hexdigest(), 9)
    assert (dead[0]["kafka_topic"], dead[0]["record_timestamp_ms"]) == ("posts", 1011)
    assert (dead[0]["parser"], dead[0]["url"]) == (None, None)  # those are a parser's rejection's
    assert "not JSON" in dead[0]["reason"]
    assert "missing required field(s): user" in dead[1]["reason"]
    assert dead[4]["payload"] is None and dead[4]["payload_sha256"] is None and "tombstone" in dead[4]["reason"]
    assert {r["target_table"] for r in dead} == {"sink_test"} and {r["source"] for r in dead} == {"g1"}
    assert DeltaTable(str(tmp_path / "dl")).metadata().description == DEAD_LETTER_TABLE.comment
    # Replaying the batch duplicates neither table.
    sink.write(batch)
    assert len(rows(str(tmp_path / "t"))) == 2 and len(rows(str(tmp_path / "dl"))) == 5


def test_crash_between_dead_letter_and_main_commit_replays_without_duplicates(sink, tmp_path, monkeypatch):
    batch = [rec(0, 0, {"user": "a"}), rec(0, 1, b"bad"), rec(0, 2, {"user": "c"})]

    def die(*_a, **_k):
        raise KeyboardInterrupt("killed after the dead-letter commit")

    monkeypatch.setattr(sink.table, "append", die)
    with pytest.raises(KeyboardInterrupt):
        sink.write(batch)
    monkeypatch.undo()
    assert len(rows(str(tmp_path / "dl"))) == 1 and sink.positions("posts", [0]) == {0: None}
    result = sink.write(batch)
    assert (result.written, result.dead_lettered) == (2, 0)
    assert [r["kafka_offset"] for r in rows(str(tmp_path / "t"))] == [0, 2]
    assert [r["kafka_offset"] for r in rows(str(tmp_path / "dl"))] == [1]
    assert sink.positions("posts", [0]) == {0: 3}


def test_batch_of_only_dead_letters_still_advances_the_table(sink, tmp_path):
    sink.write([rec(2, 0, b"x"), rec(2, 1, b"y")])
    assert sink.positions("posts", [2]) == {2: 2}
    assert rows(str(tmp_path / "t")) == []


def test_zombie_writer_with_stale_positions_cannot_commit(sink, tmp_path, monkeypatch):
    from deltalake.exceptions import CommitFailedError

    sink.write([rec(0, 0, {"user": "a"})])
    new_owner = DeltaSink(str(tmp_path / "t"), SPEC, "g1", dead_letter_uri=str(tmp_path / "dl"))
    read_positions = sink.table.positions

    def positions_then_rebalance(keys):
        found = read_positions(keys)
        # While the zombie holds these positions, the partition's new owner writes the same records.
        new_owner.write([rec(0, 1, {"user": "b"}), rec(0, 2, {"user": "c"})])
        return found

    monkeypatch.setattr(sink.table, "positions", positions_then_rebalance)
    with pytest.raises(CommitFailedError, match="Concurrent transaction"):
        sink.write([rec(0, 1, {"user": "b"}), rec(0, 2, {"user": "c"})])
    assert [r["kafka_offset"] for r in rows(str(tmp_path / "t"))] == [0, 1, 2]


def test_parser_rejections_and_sink_dead_letters_land_in_one_table(sink, tmp_path):
    """Both ways input is refused end in ``dead_letter``: a crawler's rejection through the dead-letter
    topic's own landing, and a record another sink could not convert; replays add nothing to either."""
    from focuscrawl.crawl import dead_letters
    from focuscrawl.parse.rejection import Rejection

    uri = str(tmp_path / "dl")
    letters = DeltaSink(uri, DEAD_LETTER_TABLE, "dead_letter-to-delta", dead_letter_uri=uri,
                        convert=dead_letters.decode_row)
    letter = Rejection("body is not valid JSON", b"{bad", "http://h/r/all/new.json", "listing").dead_letter(
        "listing-crawler", at_ms=7)
    topic = dead_letters.DEAD_LETTER_TOPIC
    landing = [StreamRecord(topic, 0, 0, dead_letters.encode(letter), key=b"h"),
               StreamRecord(topic, 0, 1, b'{"reason": "no payload"}', key=b"h", timestamp_ms=5)]
    writes = [(letters.write(landing).written, sink.write([rec(0, 0, b"{not json")]).dead_lettered) for _ in range(2)]
    assert writes == [(1, 1), (0, 0)]
    assert letters.positions(topic, [0]) == {0: 2} and sink.positions("posts", [0]) == {0: 1}
    got = {(r["source"], r["kafka_offset"]): r for r in DeltaTable(uri).to_pyarrow_table().to_pylist()}
    assert sorted(got) == [("dead_letter-to-delta", 1), ("g1", 0), ("listing-crawler", 0)]
    parsed = got[("listing-crawler", 0)]
    assert {k: parsed[k] for k in ("parser", "url", "payload", "payload_size", "rejected_at_ms", "target_table")} == \
        {"parser": "listing", "url": "http://h/r/all/new.json", "payload": b"{bad", "payload_size": 4,
         "rejected_at_ms": 7, "target_table": None}
    assert (parsed["kafka_topic"], parsed["payload_sha256"]) == (topic, letter.payload_sha256)
    unlanded = got[("dead_letter-to-delta", 1)]
    assert (unlanded["target_table"], unlanded["kafka_topic"], unlanded["record_timestamp_ms"]) == ("dead_letter", topic, 5)
    assert "base64" in unlanded["reason"] and unlanded["parser"] is None
    assert (got[("g1", 0)]["target_table"], got[("g1", 0)]["kafka_topic"]) == ("sink_test", "posts")
