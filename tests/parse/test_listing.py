import hashlib
import json

from hypothesis import given, settings, strategies as st

from focuscrawl.parse import Rejection, rejection_counts
from focuscrawl.parse.listing import parse_listing

URL = "http://127.0.0.1:18090/r/depression/new.json"


def _post(**over):
    data = {"name": "t3_abc", "id": "abc", "author": "alice", "created_utc": 1700000000.0, "title": "hi", "score": 3}
    data.update(over)
    return {"kind": "t3", "data": data}


def _listing(children, after="t3_abc"):
    return json.dumps({"kind": "Listing", "data": {"after": after, "children": children}}).encode()


def test_valid_listing_keeps_data_and_kind():
    comment = {"kind": "t1", "data": {"name": "t1_c", "id": "c", "author": "bob", "created_utc": 1700000001}}
    parsed = parse_listing(_listing([_post(), comment]), URL)
    assert parsed.after == "t3_abc"
    assert parsed.rejections == []
    assert parsed.records == [
        {"name": "t3_abc", "id": "abc", "author": "alice", "created_utc": 1700000000.0, "title": "hi", "score": 3, "kind": "t3"},
        {"name": "t1_c", "id": "c", "author": "bob", "created_utc": 1700000001, "kind": "t1"},
    ]


def test_null_after_ends_pagination():
    assert parse_listing(_listing([], after=None), URL).after is None


def test_bad_children_are_rejected_one_by_one_with_raw_payload():
    bad = [_post(author=None), _post(created_utc="yesterday"), _post(created_utc=True), {"kind": "more", "data": {}}, 7]
    parsed = parse_listing(_listing([_post()] + bad), URL)
    assert len(parsed.records) == 1
    reasons = [r.reason for r in parsed.rejections]
    assert reasons == [
        "t3 field 'author' is NoneType, expected str",
        "t3 field 'created_utc' is str, expected int or float",
        "t3 field 'created_utc' is bool, expected int or float",
        "child kind 'more' is not a record kind (t1, t2, t3, t4, t5, t6)",
        "child is a int, not an object",
    ]
    assert json.loads(parsed.rejections[0].payload) == _post(author=None)
    assert all(r.url == URL and r.parser == "listing" for r in parsed.rejections)


def test_malformed_json_is_one_rejection_not_an_exception():
    before = rejection_counts().get("listing", 0)
    parsed = parse_listing(b'{"kind": "Listing", "data": {', URL)
    assert parsed.records == [] and parsed.after is None
    [rej] = parsed.rejections
    assert isinstance(rej, Rejection)
    assert rej.reason.startswith("body is not valid JSON")
    assert rej.payload == b'{"kind": "Listing", "data": {'
    assert rejection_counts()["listing"] == before + 1


def test_dead_letter_carries_payload_and_hash():
    [rej] = parse_listing(b"not json", URL).rejections
    letter = rej.dead_letter(source="crawler-1", at_ms=5)
    assert letter.payload == b"not json"
    assert letter.payload_sha256 == hashlib.sha256(b"not json").hexdigest()
    assert letter.payload_size == 8 and letter.rejected_at_ms == 5 and letter.source == "crawler-1"


def test_dead_letter_fits_the_declared_table():
    from dataclasses import asdict

    import pyarrow as pa

    from focuscrawl.lake.delta_sink import DEAD_LETTER_TABLE
    from focuscrawl.lake.tables import TABLES

    [rej] = parse_listing(b"{", URL).rejections
    letter = asdict(rej.dead_letter(source="c", at_ms=1))
    assert set(letter) <= set(DEAD_LETTER_TABLE.column_names)
    table = pa.Table.from_pylist([letter], schema=DEAD_LETTER_TABLE.arrow_schema())
    assert TABLES["dead_letter"] is DEAD_LETTER_TABLE
    assert table.column("reason")[0].as_py().startswith("body is not valid JSON")
    assert table.column("payload")[0].as_py() == b"{"


def test_not_a_listing_and_deep_nesting():
    assert parse_listing(b"[]", URL).rejections[0].reason.startswith("not a listing")
    assert "recursion" in parse_listing(b"[" * 50000, URL).rejections[0].reason


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_never_crash(body):
    parsed = parse_listing(body, URL)
    if not parsed.records:  # random bytes are almost never a listing; when refused, the whole body is kept
        assert parsed.rejections == [] or parsed.rejections[0].payload == body


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["kind", "data", "children", "after", "name", "id", "author", "created_utc"]), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values, max_size=6), json_values)
def test_any_children_each_become_a_record_or_a_rejection(children, after):
    body = json.dumps({"data": {"children": children, "after": after}}).encode()
    parsed = parse_listing(body, URL)
    after_rejected = 0 if after is None or isinstance(after, str) else 1
    assert len(parsed.records) + len(parsed.rejections) == len(children) + after_rejected
