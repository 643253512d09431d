"""The page revisitor (seed 002): snapshots without outlinks in the digest, one revisit per page and
period in pushed-priority order, discovery, restart without duplicates, and weekly snapshots of the
real world through the fetch layer into Delta."""

from __future__ import annotations

import dataclasses

import pytest

from focuscrawl.lake.decision import DECISION_COLUMN_NAMES
from focuscrawl.outlinks.revisit import WEEK, PageRevisitor, SnapshotWriter, snapshot
from focuscrawl.outlinks.urls import virtual_host_domain

SITE = "http://127.0.0.1:9/site/"


def page(text: str, links: list[str]) -> bytes:
    anchors = "".join(f'<li><a href="{u}">{u.rsplit("/", 1)[-1]}</a></li>' for u in links)
    return f"<html><head><title>T</title><script>var x=1;</script></head><body><p>{text}</p><ul>{anchors}</ul>" \
           f"</body></html>".encode()


def test_snapshot_splits_outlinks_by_virtual_host_and_digests_content_without_them():
    url = SITE + "a.wiki.test/wiki/P"
    links = [SITE + "a.wiki.test/wiki/Q", "/site/b.wiki.test/wiki/R", SITE + "a.wiki.test/wiki/Q", "mailto:x@y.z"]
    row = snapshot(url, page("some text here", links), 3, 1_700_000_000.0, domain_of=virtual_host_domain())
    assert row["internal_outlinks"] == [SITE + "a.wiki.test/wiki/Q"]
    assert row["external_outlinks"] == [SITE + "b.wiki.test/wiki/R"]
    assert row["text"] == "T some text here" and row["period"] == 3 and row["status"] == 200
    same_text_new_links = snapshot(url, page("some text here", [SITE + "c.wiki.test/wiki/S"]), 4, 0.0)
    assert same_text_new_links["content_digest"] == row["content_digest"]
    assert snapshot(url, page("other text", links), 4, 0.0)["content_digest"] != row["content_digest"]


class FakeSite:
    def __init__(self, pages: dict[str, list[str]]) -> None:
        self.pages = pages
        self.log: list[str] = []

    def get(self, url: str) -> bytes:
        self.log.append(url)
        if url not in self.pages:
            raise LookupError(f"{url}: 404")
        return page("text of " + url, self.pages[url])


def test_a_body_that_is_no_page_is_dead_lettered_and_the_page_revisited_next_period():
    """A malformed body (cut off, then a NUL: the world's fault) lands no snapshot with no text and no links;
    it goes to the dead letters with its bytes, and the page is revisited, and snapshotted, next period."""
    a, b = SITE + "s.wiki.test/wiki/A", SITE + "s.wiki.test/wiki/B"
    site = FakeSite({a: [b], b: []})
    good = site.get
    broken = {a}

    def get(url: str) -> bytes:
        body = good(url)
        return body[: len(body) // 3] + b'<<{"\x00' if url in broken else body

    site.get = get
    now, rows, dead = [100.0], [], []
    rev = PageRevisitor(site, rows.append, lambda: now[0], origin=100.0, on_rejection=dead.append)
    rev.add([a, b])
    from focuscrawl.parse.rejection import rejection_counts

    rejected = rejection_counts().get("html", 0)
    drain(rev)
    assert rejection_counts().get("html", 0) == rejected + 1  # one parse of the page, one rejection logged
    assert [r["url"] for r in rows] == [b] and rev.malformed == 1 and rev.status()["malformed"] == 1
    assert [(d.parser, d.url) for d in dead] == [("html", a)] and dead[0].payload.endswith(b"\x00")
    broken.clear()
    now[0] += WEEK
    drain(rev)
    assert sorted((r["url"], r["period"]) for r in rows) == [(a, 1), (b, 0), (b, 1)]


def drain(revisitor: PageRevisitor) -> None:
    """Revisit every page due in the clock's current period."""
    revisitor.revisit_next()
    while revisitor.due():
        revisitor.revisit_next()


def test_each_page_once_per_period_in_pushed_priority_order_with_discovery():
    a, b, c, d = (SITE + f"s.wiki.test/wiki/{x}" for x in "ABCD")
    site = FakeSite({a: [b, SITE + "s.wiki.test/other/X"], b: [c], c: [a], d: []})
    now = [100.0]
    rows = []
    rev = PageRevisitor(site, rows.append, lambda: now[0], origin=100.0, discover=r"/wiki/", max_pages=3)
    rev.add([a])
    drain(rev)
    # Period 0: breadth-first discovery from the seed, capped at 3 known pages; /other/ is not followed.
    assert site.log == [a, b, c] and [r["period"] for r in rows] == [0, 0, 0]
    assert rev.revisit_next() is None and rev.status()["next_pick"] == a  # next period starts with a
    rev.apply_priority(c, 0.9)
    rev.apply_priority(b, 0.2)
    assert rev.order(3) == [(c, 0.9), (b, 0.2), (a, -1.0)]
    now[0] += WEEK
    rev.revisit_next()
    assert rev.status()["best_known"] == [c, 0.9] and rev.status()["next_pick"] == b  # c went first
    rev.apply_priority(a, 1.0)  # a push during the period reorders what is still due
    drain(rev)
    assert site.log[3:] == [c, a, b] and [r["period"] for r in rows[3:]] == [1, 1, 1]
    rev.apply_priority(c, None)  # deleted from the topic: back to unscored
    assert rev.order(3) == [(a, 1.0), (b, 0.2), (c, -1.0)]
    status = rev.status()
    assert (status["period"], status["known"], status["revisits"], status["priorities_applied"]) == (1, 3, 6, 4)


def test_each_snapshot_lands_the_push_that_chose_it_and_a_seed_says_no_push_did():
    a, b, c = (SITE + f"s.wiki.test/wiki/{x}" for x in "ABC")
    rows = []
    now = [0.0]
    rev = PageRevisitor(FakeSite({a: [b, c], b: [], c: []}), rows.append, lambda: now[0], discover=r"/wiki/")
    rev.add([a])
    rev.revisit_next()  # the seed, before any push
    pushed = {"model": "NNL-ET_LBLA/int", "model_version": 7, "predicted": 3.5, "period": 1}
    rev.apply_pushed(c, {"score": 0.9, "rank": 1, **pushed})
    rev.apply_pushed(b, {"score": 0.4, "rank": 2, **pushed})
    drain(rev)
    chosen = lambda row: tuple(row[k] for k in DECISION_COLUMN_NAMES)  # noqa: E731
    assert [(r["url"], chosen(r)) for r in rows] == [
        (a, ("revisits", "discovery_order", None, None, None, None)),
        (c, ("revisits", "NNL-ET_LBLA", "NNL-ET_LBLA/int", 7, 0.9, 1)),
        (b, ("revisits", "NNL-ET_LBLA", "NNL-ET_LBLA/int", 7, 0.4, 2))]
    rev.apply_pushed(c, None)  # deleted from the topic: no push chooses it any more
    now[0] += WEEK
    drain(rev)
    assert {r["url"]: r["chosen_by_method"] for r in rows[3:]} == {a: "discovery_order", b: "NNL-ET_LBLA",
                                                                   c: "discovery_order"}
    assert rev.status()["priorities_applied"] == 3


def test_a_snapshot_table_made_before_the_decision_columns_takes_them_on(tmp_path):
    """An existing lake: the table grows the chosen_* columns on the next flush, null in the rows before."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from focuscrawl.outlinks.tables import SNAPSHOTS

    a, b = SITE + "s.wiki.test/wiki/A", SITE + "s.wiki.test/wiki/B"
    old = pa.schema([f for f in SNAPSHOTS.arrow_schema() if f.name not in DECISION_COLUMN_NAMES])
    write_deltalake(str(tmp_path / "snapshots"), pa.Table.from_pylist([{"url": a, "period": 0}], schema=old),
                    partition_by=["period"])
    writer = SnapshotWriter(str(tmp_path / "snapshots"))
    rev = PageRevisitor(FakeSite({b: []}), writer, lambda: 0.0)
    rev.add([b])
    rev.apply_pushed(b, {"score": 0.5, "rank": 1, "model": "NNL-ET_LBLA/int", "model_version": 2})
    rev.revisit_next()
    assert writer.flush() == 1
    rows = {r["url"]: r for r in DeltaTable(str(tmp_path / "snapshots")).to_pyarrow_table().to_pylist()}
    assert (rows[a]["chosen_by_model"], rows[b]["chosen_by_model_version"], rows[b]["chosen_score"]) == (None, 2, 0.5)


def test_a_failed_fetch_is_counted_and_the_page_waits_for_the_next_period():
    good, gone = SITE + "s.wiki.test/wiki/A", SITE + "s.wiki.test/wiki/Gone"
    site = FakeSite({good: []})
    rows = []
    rev = PageRevisitor(site, rows.append, lambda: 0.0)
    rev.add([gone, good])
    assert rev.revisit_next() is None and rev.failures == 1
    assert rev.revisit_next()["url"] == good and rev.due() == 0


def test_restart_resumes_from_the_table_without_duplicates(tmp_path):
    a, b = SITE + "s.wiki.test/wiki/A", SITE + "s.wiki.test/wiki/B"
    site = FakeSite({a: [b], b: []})
    writer = SnapshotWriter(str(tmp_path / "snapshots"))
    rev = PageRevisitor(site, writer, lambda: 0.0, discover="/wiki/")
    rev.add([a])
    rev.revisit_next()
    assert writer.flush() == 1
    # A new process: b is not known from any seed, a was done this period.
    again = PageRevisitor(site, writer, lambda: 0.0, discover="/wiki/")
    again.restore(writer.seen())
    assert again.due() == 0 and again.status()["known"] == 1
    later = PageRevisitor(site, writer, lambda: WEEK, discover="/wiki/")
    later.restore(writer.seen())
    drain(later)
    writer.flush()
    assert sorted(writer.seen()) == [(a, 0), (a, 1), (b, 1)]


def test_a_replayed_period_adds_no_row(tmp_path):
    """A world restarted with its clock rewound made the revisitor fetch past periods again: the table's
    key (url, period) keeps the first snapshot and adds none."""
    a, b = SITE + "s.wiki.test/wiki/A", SITE + "s.wiki.test/wiki/B"
    writer = SnapshotWriter(str(tmp_path / "snapshots"))
    rev = PageRevisitor(FakeSite({a: [b], b: []}), writer, lambda: 0.0, discover="/wiki/")
    rev.add([a])
    drain(rev)
    assert writer.flush() == 2
    replay = PageRevisitor(FakeSite({a: [], b: [a]}), writer, lambda: 0.0, discover="/wiki/")  # no restore: a rewound run
    replay.add([a, b])
    drain(replay)
    assert len(writer.rows) == 2
    writer.rows.append(dict(writer.rows[0]))  # and a pair twice within one batch
    assert writer.flush() == 0
    assert sorted(writer.seen()) == [(a, 0), (b, 0)]
    kept = {url: links for url, _, links, _ in writer.history()}
    assert kept[a] == [b]  # the first snapshot of the pair, not the replay's


def test_a_snapshot_waits_for_its_commit_at_most_the_flush_time(tmp_path, monkeypatch):
    """Rows are committed when there are enough of them or the oldest has waited long enough: at the
    world's pace the first 200 rows came 94 s after the platform was up, and the loop waited for them."""
    now = [100.0]
    monkeypatch.setattr("focuscrawl.outlinks.revisit.time.monotonic", lambda: now[0])
    writer = SnapshotWriter(str(tmp_path / "snapshots"))
    assert not writer.due(200, 30.0)  # nothing buffered, nothing due however long
    writer({"url": "a"})
    now[0] += 29.0
    writer({"url": "b"})
    assert not writer.due(200, 30.0)
    now[0] += 1.0
    assert writer.due(200, 30.0)  # the oldest row's 30 s, though 2 rows only
    assert writer.due(2, 3600.0)  # or enough rows
    writer.rows = []  # as a flush leaves it
    writer({"url": "c"})
    assert not writer.due(200, 30.0)  # the clock restarts with the next first row


@pytest.fixture(scope="module")
def small_world():
    """A generated world on free ports, clock paused (the test moves it), no rate limit."""
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    world = build_world(7, data_dir=None, users=200, paused=True, rate_limit=0, events_per_minute=0.01)
    with WorldServer(world, "127.0.0.1", 0, 0) as server:
        yield world, server


@pytest.mark.integration  # a real world over HTTP, Delta and GX: tens of seconds on a loaded machine
def test_weekly_snapshots_of_the_world_through_the_fetch_layer(small_world, cfg, tmp_path):
    from focuscrawl.fetch import Fetcher, HostPoliteness
    from focuscrawl.outlinks.tables import SNAPSHOTS
    from focuscrawl.outlinks.targets import targets
    from focuscrawl.lake.quality import validate_table

    world, server = small_world
    allowed = dataclasses.replace(cfg, allow_private_hosts=(server.url.removeprefix("http://"),))
    fetcher = Fetcher.from_settings(allowed, politeness=HostPoliteness(min_delay=0))
    web = world.web
    seed = server.url + web.page_path(0)
    writer = SnapshotWriter(str(tmp_path / "page_snapshots"))
    rev = PageRevisitor(fetcher, writer, world.clock.now, origin=world.clock.start_epoch,
                        domain_of=virtual_host_domain(), discover="/site/[^/]+/wiki/", max_pages=40)
    rev.add([seed])
    for week in range(3):
        drain(rev)
        writer.flush()
        world.clock.advance(WEEK)
    result = validate_table(writer.table_path, SNAPSHOTS, ("url", "period"))
    assert (result.success, result.row_count) == (True, 120)
    from deltalake import DeltaTable

    rows = DeltaTable(writer.table_path).to_pandas()
    first = rows[rows["url"] == seed].sort_values("period").iloc[0]
    host = web.page_path(0).split("/")[2]
    assert set(first["internal_outlinks"]) | set(first["external_outlinks"]) == {
        server.url + web.page_path(b) for b in web.links[0]} | {
        server.url + link for link in (web.added_link(0, j) for j in range(len(web.changes(0, world.clock.start_epoch))))}
    assert all(f"/site/{host}/" in u for u in first["internal_outlinks"])
    assert not any(f"/site/{host}/" in u for u in first["external_outlinks"])
    # The world's pages gain links week by week; their text does not change.
    changes = targets(rows)
    assert changes["nnl_int"].sum() + changes["nnl_ext"].sum() > 20 and not changes["content_changed"].any()


def test_the_scope_decides_which_outlinks_become_known_and_reports_each_refusal():
    from focuscrawl.fetch.scope import Scope, ScopeRules

    a, b, c = (SITE + f"s.wiki.test/wiki/{x}" for x in "ABC")
    cal = SITE + "s.wiki.test/wiki/Calendar?month=2024-05"
    site = FakeSite({a: [b, cal], b: [c], c: []})
    refusals = []
    scope = Scope(ScopeRules(max_depth=1, deny=(r"\?month=",)), on_refusal=refusals.append,
                  host_of=virtual_host_domain())
    rev = PageRevisitor(site, [].append, lambda: 100.0, origin=100.0, discover=r"/wiki/", scope=scope)
    rev.add([a])
    drain(rev)
    assert site.log == [a, b]                     # c is two links from the seed
    assert [(r.reason, r.url) for r in refusals] == [("denied", cal), ("too_deep", c)]
    assert rev.depth == {a: 0, b: 1}
    assert rev.status()["scope"] == {"admitted": 2, "refused": {"denied": 1, "too_deep": 1}}
