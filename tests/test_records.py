"""Typed records between modules (issue 21, point 5): every record round-trips through its JSON, keeps
the wire format the bare dicts had, and a malformed message raises a RecordError naming the field."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from focuscrawl.ephemeral.crawler import ClickAnswer, ClickPosition, ClickTotal, CrawledPage, PageClicks, SourceState
from focuscrawl.ephemeral.tables import ClickRecord
from focuscrawl.fetch.conditional import Validators
from focuscrawl.lake.decision import Decision
from focuscrawl.fue.chooser import UserState
from focuscrawl.fue.evidence import EvidenceState, Post, UserEvidence
from focuscrawl.fue.pipeline import ExtractRequest, History, StatsEvent, post_from_json, post_to_json
from focuscrawl.graph.estimators import Distribution
from focuscrawl.graph.live import RoundRecord
from focuscrawl.topics.priority import Priority
from focuscrawl.core.records import JsonRecord, RecordError, decode, encode

PACKAGE = Path(__file__).resolve().parents[1] / "include" / "focuscrawl"


class PostCodec:
    """``Post`` lives in ``fue/evidence.py``; its topic codec is ``post_to_json``/``post_from_json``."""

    @staticmethod
    def to_json(post: Post) -> bytes:
        return post_to_json(post)

    @staticmethod
    def from_json(value: bytes) -> Post:
        return post_from_json(value)


# One instance of every record, each field set away from its default, and the JSON keys it goes out with.
SAMPLES = {
    "ExtractRequest": (ExtractRequest, ExtractRequest("alice", "HCP", Decision("fue", "HCP", "candidate-classifier/HCP",
                                                                              3, 0.9, 1)), ["user", "method", "chosen"]),
    "History": (History, History("alice", ("a post", "a comment"), 3, 1.5, "HCP", ("depression",), 1.7e9),
                ["user", "texts", "pages", "seconds", "method", "communities", "fetched_at", "chosen"]),
    "StatsEvent": (StatsEvent, StatsEvent("run", "HCP", "alice", 60.0, 1.7e9, 1.5, 12, 3, 0.95, True, "text"),
                   ["run_id", "method", "user", "sim_time", "sim_epoch", "extraction_seconds", "items", "pages",
                    "probability", "relevant", "history_text", "chosen"]),
    "Post": (PostCodec, Post("alice", 1.7e9, 5.0, 2.0, "title", "body", "depression", "t3_x", ("f.warc.gz", 10, "id"),
                             "http://w/r/depression/new.json", 1_700_000_000_000, "RANDOM"),
             ["author", "created_utc", "score", "num_comments", "title", "text", "community", "post_id", "warc",
              "listing_url", "fetched_at_ms", "chosen_by"]),
    "RoundRecord": (RoundRecord, RoundRecord(3, "g-r00003", "RW", 120, 40, 41, 1.7e9, 38, 7),
                    ["round", "crawl_id", "sampler", "rows", "draws", "queries", "finished_at", "pages_scored",
                     "relevant"]),
    "SourceState": (SourceState, SourceState("http://s/", 10.0, 20.0, 5.0, ("http://s/a",),
                                             ((1.0, 60.0, (("http://s/b", None), ("http://s/c", 2.0))),),
                                             Validators('"e1"', "Wed, 02 Dec 2026 10:00:00 GMT", "ab12", 12, "<urn:x>"),
                                             "rss"),
                    ["url", "last_read", "last_recrawl", "last_gap", "known", "batches", "validators", "kind"]),
    "Validators": (Validators, Validators('"e1"', "Wed, 02 Dec 2026 10:00:00 GMT", "ab12", 12, "<urn:x>"),
                   ["etag", "last_modified", "digest", "length", "record_id"]),
    "CrawledPage": (CrawledPage, CrawledPage("http://s/a", "http://s/", 3.0, "c2ln"),
                    ["url", "source_url", "published", "minhash"]),
    "ClickPosition": (ClickPosition, ClickPosition(12.5), ["since"]),
    "ClickTotal": (ClickTotal, ClickTotal(4.0), ["total"]),
    "PageClicks": (PageClicks, PageClicks("/n/1", 100.0, 2.5), ["path", "crawled_at", "clicks"]),
    "ClickAnswer": (ClickAnswer, ClickAnswer(900.0, (PageClicks("/n/1", 100.0, 2.5), PageClicks("/n/2", 0.0, 0.0))),
                    ["until", "clicks"]),
    "ClickRecord": (ClickRecord, ClickRecord("http://s/", "http://s/a", 1_700_000_000_000_000, 1_700_000_600_000_000, 3,
                                             1_700_000_100_000_000),
                    ["source_url", "page_url", "created_at", "observed_at", "clicks", "counted_from"]),
    "Priority": (Priority, Priority(0.25, {"skip_below": 0.1, "source": "x"}), ["score", "skip_below", "source"]),
    "Distribution": (Distribution, Distribution("copies", {1: 0.75, 4: 0.25}), ["target", "shares"]),
    "UserState": (UserState, UserState("alice", "judged", 4, (0.5, 0.25),
                                       EvidenceState(2, 5.0, 1.0, 30.0, 0.5, -0.5, ["a", "b"], 3, ["c"], ["t3_x", "t3_y"]),
                                       UserEvidence("alice", 2, 2.5, 0.5, 15.0, 14.5, "a b", ("c",)), True),
                  ["user", "status", "seq", "scores", "evidence", "snapshot", "relevant", "pushed"]),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_record_round_trips_with_the_same_json_keys(name):
    cls, record, keys = SAMPLES[name]
    wire = cls.to_json(record) if cls is PostCodec else record.to_json()
    assert sorted(json.loads(wire)) == sorted(keys)
    assert cls.from_json(wire) == record
    assert cls.from_json(wire.decode()) == record  # a str decodes like bytes


# A malformed message of each record: what is wrong with it, and the start of the error it must give.
MALFORMED = [
    (ExtractRequest, b'{"method": "HCP"}', "ExtractRequest.user: missing"),
    (ExtractRequest, b'{"user": 7}', "ExtractRequest.user: expected a string, got 7"),
    (ExtractRequest, b'"alice"', "ExtractRequest: expected a JSON object"),
    (ExtractRequest, b"alice", "ExtractRequest: not JSON"),
    (ExtractRequest, None, "ExtractRequest: no value"),
    (History, b'{"user": "a", "texts": "one text", "pages": 1, "seconds": 1}', "History.texts: expected a list"),
    (History, b'{"user": "a", "texts": ["x", 2], "pages": 1, "seconds": 1}', "History.texts: item 1: expected a string"),
    (History, b'{"user": "a", "texts": [], "pages": 1.5, "seconds": 1}', "History.pages: expected an integer, got 1.5"),
    (History, b'{"user": "a", "texts": [], "pages": 1}', "History.seconds: missing"),
    (StatsEvent, json.dumps({**json.loads(SAMPLES["StatsEvent"][1].to_json()), "relevant": "yes"}).encode(),
     "StatsEvent.relevant: expected true or false, got 'yes'"),
    (StatsEvent, b'{"run_id": "r"}', "StatsEvent.method: missing"),
    (PostCodec, b'{"created_utc": 1.0}', "Post.author: missing"),
    (PostCodec, b'{"author": "a", "created_utc": "yesterday"}', "Post.created_utc: expected a number, got 'yesterday'"),
    (PostCodec, b'{"author": "a", "created_utc": 1, "warc": "f.warc.gz"}', "Post.warc: expected a list"),
    (RoundRecord, b'{"round": 1}', "RoundRecord.crawl_id: missing"),
    (RoundRecord, json.dumps({**json.loads(SAMPLES["RoundRecord"][1].to_json()), "round": True}).encode(),
     "RoundRecord.round: expected an integer, got True"),
    (SourceState, b'{"url": "u", "last_read": null, "last_recrawl": 1, "batches": [[1, 2, [["p", "soon"]]]]}',
     "SourceState.batches: item 0: item 2: item 0: item 1: expected a number, got 'soon'"),
    (SourceState, b'{"url": "u", "last_read": null, "last_recrawl": 1, "batches": [[1, [["p", 1]]]]}',
     "SourceState.batches: item 0: expected a list of 3 items"),
    (SourceState, b'{"url": "u", "last_read": null}', "SourceState.last_recrawl: missing"),
    (SourceState, b'{"url": "u", "last_read": null, "last_recrawl": 1, "validators": {"length": "big"}}',
     "SourceState.validators: Validators.length: expected an integer, got 'big'"),
    (Validators, b'{"etag": 7}', "Validators.etag: expected a string, got 7"),
    (CrawledPage, b'{"url": "u", "published": null}', "CrawledPage.source_url: missing"),
    (ClickPosition, b'{"until": 3}', "ClickPosition.since: missing"),
    (ClickTotal, b'{"total": null}', "ClickTotal.total: expected a number, got None"),
    (PageClicks, b'{"path": "/n/1", "crawled_at": 1}', "PageClicks.clicks: missing"),
    (ClickAnswer, b'{"until": 9, "clicks": [{"path": "/n/1", "clicks": 1}]}',
     "ClickAnswer.clicks: item 0: PageClicks.crawled_at: missing"),
    (ClickAnswer, b'{"until": 9, "clicks": ["/n/1"]}', "ClickAnswer.clicks: item 0: expected a JSON object (PageClicks)"),
    (ClickRecord, b'{"source_url": "s", "page_url": "p", "created_at": 1, "observed_at": 2}', "ClickRecord.clicks: missing"),
    (ClickRecord, b'{"source_url": "s", "page_url": "p", "created_at": 1, "observed_at": 2, "clicks": 2.5}',
     "ClickRecord.clicks: expected an integer, got 2.5"),
    (Priority, b'{"priority": 0.5}', "Priority.score: missing"),
    (Priority, b'{"score": "high"}', "Priority.score: expected a number, got 'high'"),
    (Distribution, b'{"target": "size", "shares": {}}', "Distribution.target: expected one of"),
    (Distribution, b'{"target": "copies", "shares": {"two": 1.0}}', "Distribution.shares: expected {value: share}"),
    (Distribution, b'{"target": "label", "shares": {"a": "most"}}', "Distribution.shares: expected {value: share}"),
    (Distribution, b'{"target": "label"}', "Distribution.shares: missing"),
    (UserState, b'{"user": "a", "status": "chosen", "seq": 1, "snapshot": {"count": 2}}',
     "UserState.snapshot: UserEvidence.user: missing"),
    (UserState, b'{"user": "a", "status": "candidate", "seq": 1, "scores": [0.5, "high"]}',
     "UserState.scores: item 1: expected a number, got 'high'"),
]


@pytest.mark.parametrize("cls,value,message", MALFORMED, ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(MALFORMED)])
def test_a_malformed_message_names_the_record_and_field(cls, value, message):
    with pytest.raises(RecordError) as err:
        cls.from_json(value)
    assert str(err.value).startswith(message), str(err.value)
    assert isinstance(err.value, ValueError)  # the stages' and sinks' "bad record" handling catches it


def test_every_record_of_the_package_has_a_sample_and_a_malformed_case():
    """A record added on :mod:`focuscrawl.core.records` (the mixin, or its helpers) without a case here fails."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text()
        if "focuscrawl.core.records import" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", None)) for b in node.bases}
                methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                if "JsonRecord" in bases or "from_json" in methods:
                    found.add(node.name)
    found.discard("JsonRecord")
    assert found - set(SAMPLES) == set()
    assert found | {"Post"} == set(SAMPLES)
    assert {"Post" if c is PostCodec else c.__name__ for c, _, _ in MALFORMED} == set(SAMPLES)


def test_wire_format_is_what_the_bare_dicts_were():
    """Running platforms hold these on their topics: the keys and values as before the records."""
    # (plus what chose the user, null when nothing named it: an older reader ignores the key)
    assert json.loads(ExtractRequest("alice", "HCP").to_json()) == {"user": "alice", "method": "HCP", "chosen": None}
    assert ExtractRequest.from_json(b'{"user": "alice"}') == ExtractRequest("alice")  # what tests/producers send
    assert json.loads(CrawledPage("u", "s", None).to_json()) == {"url": "u", "source_url": "s", "published": None}
    assert json.loads(ClickPosition(3.0).to_json()) == {"since": 3.0}
    assert json.loads(Priority(1, {"P": 2}).to_json()) == {"score": 1.0, "P": 2}
    evidence = EvidenceState(1, 2.0, texts=["x"], post_ids=["t3_x"])
    assert json.loads(UserState("a", "candidate", 3, (0.5,), evidence).to_json()) == {
        "user": "a", "status": "candidate", "seq": 3, "scores": [0.5], "evidence": evidence.to_dict(), "snapshot": None,
        "relevant": None, "pushed": None}
    # Written before the records: History without method/communities/fetched_at, SourceState without last_gap.
    assert History.from_json(b'{"user": "a", "texts": ["x"], "pages": 1, "seconds": 2}') == History("a", ("x",), 1, 2.0)
    assert SourceState.from_json(b'{"url": "u", "last_read": null, "last_recrawl": 1, "known": [], "batches": []}') \
        == SourceState("u", None, 1.0)


def test_the_decoder_checks_by_annotation_and_ignores_unknown_keys():
    @dataclass(frozen=True)
    class Sample(JsonRecord):
        n: int
        x: float
        tags: tuple[str, ...] = ()
        note: str | None = None
        meta: dict | None = None

    got = decode(Sample, b'{"n": 2.0, "x": 3, "tags": ["a"], "note": null, "from_a_newer_writer": 1}')
    assert got == Sample(2, 3.0, ("a",))
    assert type(got.n) is int and type(got.x) is float
    assert Sample.from_json(encode(got)) == got
    with pytest.raises(RecordError, match=r"^Sample\.meta: expected a JSON object"):
        decode(Sample, {"n": 1, "x": 1, "meta": [1]})
    with pytest.raises(RecordError, match=r"^Sample\.x: expected a number, got False"):
        decode(Sample, {"n": 1, "x": False})
