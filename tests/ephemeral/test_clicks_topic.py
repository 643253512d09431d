"""Click feedback from a project's own Kafka topic (``[loops.sources] clicks_topic``): the one record the
``page_clicks`` sink reads (ClickRecord, the crawler's record too), what it refuses, and how a malformed record ends."""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from pathlib import Path

import pyarrow as pa
import pytest

from focuscrawl.ephemeral.tables import PAGE_CLICKS, ClickRecord, click_row
from focuscrawl.lake.delta_sink import LINEAGE_COLUMNS, RecordRejected, StreamRecord
from helpers import free_port

ROOT = Path(__file__).resolve().parents[2]

GOOD = {"source_url": "https://shop.example.org/new", "page_url": "https://shop.example.org/p/1",
        "created_at": 1_700_000_000_000_000, "observed_at": 1_700_000_360_000_000, "clicks": 7,
        "counted_from": 1_700_000_060_000_000}


def record(value) -> StreamRecord:
    return StreamRecord("shop.clicks", 0, 0, value if value is None or isinstance(value, bytes) else json.dumps(value).encode())


def test_the_record_is_the_tables_row():
    """One format: the record's fields are the table's columns, required exactly where the column is not nullable;
    the Kafka lineage columns are the sink's to fill, from the record's topic, partition and offset."""
    hints = typing.get_type_hints(ClickRecord)
    fields = {f.name: type(None) not in typing.get_args(hints[f.name]) for f in dataclasses.fields(ClickRecord)}
    lineage = {c.name for c in LINEAGE_COLUMNS}
    assert fields == {c.name: not c.nullable for c in PAGE_CLICKS.columns if c.name not in lineage}
    assert lineage <= set(PAGE_CLICKS.column_names)


def test_the_documented_record_is_the_record():
    """docs/loops/ephemeral.md's table of keys is the record's fields, required where they are; its example lands."""
    section = (ROOT / "docs" / "loops" / "ephemeral.md").read_text().split("### Clicks from your own analytics")[1]
    documented = dict(re.findall(r"^\| `(\w+)` \| [^|]+ \| (yes|no) \|", section, re.M))
    assert documented == {f.name: "yes" if f.default is dataclasses.MISSING else "no"
                          for f in dataclasses.fields(ClickRecord)}
    example = json.loads(re.search(r"For example `(\{.*?\})`", section, re.S).group(1))
    assert click_row(record(example))["clicks"] == 7


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


def _project_with_click_topic(tmp_path, topic: str):
    """A project on a real site whose only loop is sources, its clicks on the project's own ``topic``."""
    from focuscrawl.project.loading import parse_project

    (tmp_path / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n')
    (tmp_path / "neg.csv").write_text("author,title\nc,game night\n")
    raw = {"name": "t", "target": "sites", "profile": {"positives": "pos.jsonl", "negatives": "neg.csv"},
           "sites": [{"name": "shop", "base_url": "https://shop.example.org",
                      "user_agent": "t/1 (+mailto:ops@example.org)"}],
           "loops": {"fue": {"enabled": False}, "revisits": {"enabled": False}, "graph": {"enabled": False},
                     "sources": {"feedback": "clicks", "clicks_topic": topic}}}
    return parse_project(raw, base_dir=tmp_path)


@pytest.mark.integration
def test_records_on_the_projects_click_topic_land_in_page_clicks_and_a_malformed_one_is_a_dead_letter(
        kafka_broker, cfg, tmp_path):
    """The planned page_clicks consumer, run as planned, on the real broker into real Delta tables: the records
    the project's analytics wrote to its clicks_topic become page_clicks rows, each malformed one a dead letter
    (its raw payload, the field at fault, its topic and offset), and the consumer goes on."""
    import os
    import signal
    import subprocess
    import uuid

    from deltalake import DeltaTable
    from kafka import KafkaProducer

    from focuscrawl.core.status_file import read_status
    from focuscrawl.lake.delta_sink import DEAD_LETTER_TABLE
    from focuscrawl.platform.plan import plan
    from focuscrawl.services.process import wait_until

    topic = f"shop.clicks-{uuid.uuid4().hex[:8]}"
    port = free_port()
    here = dataclasses.replace(cfg, var_dir=tmp_path / "var", lake=str(tmp_path / "lake"), metrics_port=port)
    specs = {s.name: s for s in plan(_project_with_click_topic(tmp_path, topic), here, airflow=False)}
    consumer = specs["consumer-page_clicks"]
    assert consumer.command[consumer.command.index("--topic") + 1] == topic

    good = [{**GOOD, "page_url": f"https://shop.example.org/p/{i}", "clicks": i} for i in range(5)]
    good[0].pop("counted_from")  # optional: counted from creation
    bad = [b"clicks=7", json.dumps({**GOOD, "clicks": "7"}).encode()]
    producer = KafkaProducer(bootstrap_servers=kafka_broker.url, acks="all")
    for value in [json.dumps(good[0]).encode(), bad[0], *(json.dumps(row).encode() for row in good[1:3]), bad[1],
                  *(json.dumps(row).encode() for row in good[3:])]:
        producer.send(topic, key=b"shop.example.org", value=value)  # one key: one partition, offsets in send order
    producer.flush(30)
    producer.close()

    log = tmp_path / "consumer.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(list(consumer.command), cwd=consumer.cwd, env={**os.environ, **consumer.env},
                                stdout=out, stderr=subprocess.STDOUT)
    def landed() -> dict:
        assert proc.poll() is None, log.read_text()[-3000:]
        status = read_status(Path(consumer.status_file))
        return status if status.get("written", 0) + status.get("dead_lettered", 0) >= len(good) + len(bad) else {}

    try:
        try:
            status = wait_until(landed, 180, "every record landed or dead-lettered", interval=0.5)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}: {read_status(Path(consumer.status_file))}\n{log.read_text()[-3000:]}")
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(60)
    assert rc == 0, log.read_text()[-3000:]
    assert (status["topic"], status["table"], status["written"], status["dead_lettered"]) == \
        (topic, "page_clicks", len(good), len(bad))

    table = DeltaTable(str(tmp_path / "lake" / "page_clicks")).to_pyarrow_table()
    # the landed rows read back as the records' epoch microseconds
    rows = pa.table({c: table[c].cast(pa.int64()) if pa.types.is_timestamp(table[c].type) else table[c]
                     for c in table.column_names}).to_pylist()
    lineage = [(r.pop("kafka_topic"), r.pop("kafka_partition"), r.pop("kafka_offset")) for r in rows]
    assert sorted(o for t, _, o in lineage if t == topic) == [0, 2, 3, 5, 6]  # the good records' offsets, once each
    assert sorted(rows, key=lambda r: r["page_url"]) == [{**row, "counted_from": row.get("counted_from")} for row in good]
    letters = DeltaTable(str(tmp_path / "lake" / DEAD_LETTER_TABLE.name)).to_pyarrow_table().to_pylist()
    letters = sorted((r for r in letters if r["kafka_topic"] == topic), key=lambda r: r["kafka_offset"])
    assert [(r["kafka_offset"], r["payload"], r["target_table"]) for r in letters] == \
        [(1, bad[0], "page_clicks"), (4, bad[1], "page_clicks")]
    assert "not JSON" in letters[0]["reason"] and "ClickRecord.clicks: expected an integer" in letters[1]["reason"]
