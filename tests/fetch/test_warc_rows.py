"""Rows that came from a fetch name its WARC record (issue 20): page_snapshots and reddit_posts rows, the
platform plan's ``[warc] enabled`` switch, and tables made before the columns existed taking them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from focuscrawl.fetch.warc import WARC_COLUMNS, WarcArchive, read_record

WARC_NAMES = [c.name for c in WARC_COLUMNS]


def test_a_snapshot_row_leads_to_the_response_its_digest_was_computed_from(site, make_fetcher, tmp_path):
    from focuscrawl.outlinks.revisit import PageRevisitor, snapshot

    site.routes["/p"] = (200, {"Content-Type": "text/html"}, b"<html><p>alpha beta</p><a href='/q'>q</a></html>")
    site.routes["/q"] = (200, {"Content-Type": "text/html"}, b"<html><p>gamma</p></html>")
    archive = WarcArchive(tmp_path / "warc", prefix="revisitor")
    rows = []
    revisitor = PageRevisitor(make_fetcher(archive=archive), rows.append, clock=lambda: 10.0, discover="/q")
    revisitor.restore([], seeds=[site.url + "/p"])
    while revisitor.revisit_next() is not None:
        pass
    archive.close()
    assert [r["url"] for r in rows] == [site.url + "/p", site.url + "/q"]
    for row in rows:
        headers, body = read_record(tmp_path / "warc", (row["warc_file"], row["warc_offset"], row["warc_record_id"]))
        assert snapshot(row["url"], body, row["period"], 10.0)["content_digest"] == row["content_digest"]
        assert headers.get_statuscode() == "200"
    assert rows[0]["warc_offset"] < rows[1]["warc_offset"]


def test_a_source_without_fetch_gives_rows_without_a_record():
    from focuscrawl.outlinks.revisit import PageRevisitor

    class Pages:
        def get(self, url):
            return b"<p>x</p>"

    rows = []
    revisitor = PageRevisitor(Pages(), rows.append, clock=lambda: 0.0)
    revisitor.restore([], seeds=["http://example.org/a"])
    revisitor.revisit_next()
    assert [rows[0][n] for n in WARC_NAMES] == [None] * len(WARC_NAMES)


def test_posts_carry_their_listing_record_to_the_reddit_posts_row(site, make_fetcher, tmp_path):
    import json

    from focuscrawl.lake.delta_sink import StreamRecord
    from focuscrawl.fue.pipeline import CommunityExplorer, RandomCommunityChooser, RedditClient, post_from_json, \
        post_row, post_to_json

    listing = {"kind": "Listing", "data": {"after": None, "children": [
        {"kind": "t3", "data": {"name": "t3_a1", "id": "a1", "author": "ann", "subreddit": "sad", "title": "hi",
                                "selftext": "", "created_utc": 1.7e9, "score": 1, "num_comments": 0}}]}}
    site.routes["/r/all/new.json?limit=100"] = (200, {"Content-Type": "application/json"}, json.dumps(listing).encode())
    archive = WarcArchive(tmp_path, prefix="fue-explorer")
    explorer = CommunityExplorer(RedditClient(make_fetcher(archive=archive), site.url), RandomCommunityChooser())
    posts = explorer.discover()
    archive.close()
    assert len(posts) == 1 and posts[0].warc is not None
    value = post_to_json(posts[0])
    assert post_from_json(value) == posts[0]  # the ref survives the topic
    row = post_row(StreamRecord(topic="t", partition=0, offset=0, key=b"ann", value=value))
    _, body = read_record(tmp_path, (row["warc_file"], row["warc_offset"], row["warc_record_id"]))
    assert json.loads(body) == listing


def _project(tmp_path, **warc):
    from focuscrawl.project.loading import parse_project

    (tmp_path / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n')
    (tmp_path / "neg.csv").write_text("author,title\nc,game night\n")
    raw = {"name": "t", "target": "world", "profile": {"positives": "pos.jsonl", "negatives": "neg.csv"},
           "sites": [{"name": "w", "world": True, "user_agent": "t/1 (+mailto:ops@example.org)"}],
           "loops": {"fue": {"method": "RND"}}, **({"warc": warc} if warc else {})}
    return parse_project(raw, base_dir=tmp_path)


@pytest.mark.parametrize("warc,archived", [({}, True), ({"enabled": False}, False)])
def test_the_plan_archives_every_fetching_process_unless_switched_off(tmp_path, warc, archived):
    from focuscrawl.config import settings
    from focuscrawl.platform.plan import Models, plan

    cfg = settings()
    specs = plan(_project(tmp_path, **warc), cfg, models=Models(Path("/m/r"), Path("/m/c")))
    with_warc = {s.name for s in specs if "--warc" in s.command}
    fetching = {"fue-explorer", "fue-extractor-rnd", "source-crawler", "revisitor", "graph-sampler"}
    assert with_warc == (fetching if archived else set())
    assert not with_warc & ({s.name for s in specs} - fetching)
    for spec in specs:
        if spec.name in with_warc:
            command = list(spec.command)
            assert command[command.index("--warc") + 1] == cfg.table_path("warc")
            assert command[command.index("--warc-max-age") + 1] == "3600"


def test_tables_made_before_the_warc_columns_take_them(tmp_path):
    from deltalake import DeltaTable, write_deltalake

    from focuscrawl.lake import ensure_table
    from focuscrawl.crawl.listing_crawler import POSTS_TABLE
    from focuscrawl.outlinks.revisit import SnapshotWriter
    from focuscrawl.outlinks.tables import SNAPSHOTS

    def old(spec):
        return pa.schema([f for f in spec.arrow_schema() if f.name not in WARC_NAMES])

    posts = str(tmp_path / "reddit_posts")
    DeltaTable.create(posts, old(POSTS_TABLE))
    assert set(WARC_NAMES) <= {f.name for f in ensure_table(posts, POSTS_TABLE).schema().fields}

    snapshots = str(tmp_path / "page_snapshots")
    row = {"url": "u", "period": 0, "status": 200, "content_digest": "d", "text": "t",
           "internal_outlinks": [], "external_outlinks": []}
    write_deltalake(snapshots, pa.Table.from_pylist([row], schema=old(SNAPSHOTS)), partition_by=["period"])
    writer = SnapshotWriter(snapshots)
    writer({**row, "url": "v", "warc_file": "f.warc.gz", "warc_offset": 7, "warc_record_id": "<urn:uuid:x>"})
    assert writer.flush() == 1
    got = DeltaTable(snapshots).to_pyarrow_table().sort_by("url").to_pylist()
    assert [(r["url"], r["warc_offset"]) for r in got] == [("u", None), ("v", 7)]


def test_a_source_recrawl_row_leads_to_the_feed_it_was_read_from(site, make_fetcher, tmp_path):
    from focuscrawl.ephemeral.crawler import SourceCrawler
    from focuscrawl.ephemeral.sources import ContentSource

    feeds = iter([b"<item><link>/n/1</link></item>", b"<item><link>/n/1</link></item><item><link>/n/2</link></item>"])
    site.routes["/feed"] = lambda h: (200, {"Content-Type": "application/rss+xml"},
                                      b'<?xml version="1.0"?><rss version="2.0"><channel><title>x</title>'
                                      + next(feeds) + b"</channel></rss>")
    archive = WarcArchive(tmp_path, prefix="source-crawler")
    fetcher = make_fetcher(archive=archive, obey_robots=False)

    def fetch(url):  # as streaming/source_crawler.py wires the fetch layer
        result = fetcher.fetch(url)
        return result.body, result.content_type, result.url, result.warc

    now, rows = [1_000_000.0], []
    crawler = SourceCrawler([ContentSource(site.url + "/feed", "feed")], fetch, lambda table, key, row: rows.append(row),
                            lambda: now[0], budget=1.0, default_interval_s=60.0, min_interval_s=1.0)
    assert crawler.step() == "recrawl"  # the first read is the archive: no row
    now[0] += 120
    for _ in range(10):  # the next due slot is the feed's second recrawl
        if rows:
            break
        crawler.step()
    archive.close()
    assert rows[0]["new_links"] == 1
    _, body = read_record(tmp_path, (rows[0]["warc_file"], rows[0]["warc_offset"], rows[0]["warc_record_id"]))
    assert b"/n/2" in body


@pytest.mark.parametrize("warc,fix", [({"max_file_age": "0s"}, "not positive"), ({"max_file_age": "soon"}, "90s"),
                                      ({"max_file_mb": 0}, "must be > 0"), ({"enable": True}, "enable")])
def test_a_malformed_warc_table_names_the_key(tmp_path, warc, fix):
    from focuscrawl.project.values import ProjectError

    with pytest.raises((ProjectError, ValueError), match=fix) as err:
        _project(tmp_path, **warc)
    assert "warc" in str(err.value)


def test_graph_sample_rows_lead_to_their_vertex_queries(tmp_path):
    from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
    from focuscrawl.graph.access import HttpGraphAccess
    from focuscrawl.graph.live import SamplingRounds, graph_sample_row
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer
    from focuscrawl.lake.delta_sink import StreamRecord
    import json

    world = build_world(5, data_dir=None, users=200, paused=True, rate_limit=0, events_per_minute=0.1, web=True)
    archive = WarcArchive(tmp_path, prefix="graph-sampler")
    with WorldServer(world) as server:
        with Fetcher("focuscrawl-test/1 (+ops@example.org)", guard=AddressGuard([server.url.removeprefix("http://")]),
                     politeness=HostPoliteness(min_delay=0), archive=archive) as fetcher:
            _, rows = SamplingRounds("w", "UNI", budget=6, every=60, seed=1).sample(
                lambda b: HttpGraphAccess(server.url, budget=b, fetcher=fetcher))
    archive.close()
    assert rows and all(r["warc_record_id"] for r in rows)
    for row in rows:
        landed = graph_sample_row(StreamRecord("t", 0, 0, json.dumps(row).encode(), b"k", 0))
        _, body = read_record(tmp_path, (landed["warc_file"], landed["warc_offset"], landed["warc_record_id"]))
        assert str(json.loads(body)["id"]) == row["vertex_id"]


@pytest.mark.slow  # Great Expectations' import: 80 s at load ~18
def test_the_quality_gate_passes_snapshots_with_and_without_a_record(tmp_path):
    """The outlinks DAG gates page_snapshots with its spec's suite: null WARC columns (a row not archived,
    or every row, as in a lake from before) must pass it like filled ones."""
    from focuscrawl.outlinks.revisit import SnapshotWriter
    from focuscrawl.outlinks.tables import SNAPSHOTS
    from focuscrawl.lake.quality import validate_table

    row = {"url": "u", "period": 0, "status": 200, "content_digest": "d", "text": "t",
           "internal_outlinks": [], "external_outlinks": []}
    for name, rows in (("mixed", [row, {**row, "url": "v", "warc_file": "f.warc.gz", "warc_offset": 7,
                                        "warc_length": 100, "warc_record_id": "<urn:uuid:x>"}]), ("none", [row])):
        writer = SnapshotWriter(str(tmp_path / name))
        for r in rows:
            writer(r)
        writer.flush()
        result = validate_table(str(tmp_path / name), SNAPSHOTS)
        assert result.success and result.row_count == len(rows), result.failures
