"""The revisitor's conditional revisits and canonical keys, against real HTTP servers (the world with
validators on, a small local site with redirects and rel=canonical) and a real Delta table: a 304 is an
"unchanged" snapshot the look-back targets read as no new outlinks and no content change, archived as a
WARC revisit record, counted; a restart keeps the validators and the aliases."""

from __future__ import annotations

import pytest
from warcio.archiveiterator import ArchiveIterator

from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.fetch.conditional import NEW, NOT_MODIFIED, SAME_BODY, Revalidator
from focuscrawl.fetch.warc import NOT_MODIFIED_PROFILE, WarcArchive
from focuscrawl.stream.metrics import Metrics
from focuscrawl.outlinks.revisit import PageRevisitor, SnapshotWriter
from focuscrawl.outlinks.targets import targets
from focuscrawl.outlinks.urls import virtual_host_domain
from focuscrawl.parse.canon import canonical_url
from focuscrawl.world.server import WorldServer
from focuscrawl.project.world import ValidatorKnobs
from helpers import HttpSite
from tests.world.conftest import START, small_world

HOUR = 3600.0


@pytest.fixture(scope="module")
def world():
    with WorldServer(small_world(seed=3, web=True, users=1000)) as server:
        server.world.validators = ValidatorKnobs(enabled=True, ignore_share=0.25, seed=2)
        yield server


def fetcher(url: str, archive=None) -> Fetcher:
    return Fetcher(user_agent="focuscrawl-test/1.0 (+mailto:t@example.org)", politeness=HostPoliteness(min_delay=0),
                   guard=AddressGuard([url.split("//", 1)[1].split("/", 1)[0]]), archive=archive)


def drain(rev: PageRevisitor) -> None:
    rev.revisit_next()
    while rev.due():
        rev.revisit_next()


def revisitor(server, writer, metrics, archive=None):
    f = fetcher(server.url, archive)
    return PageRevisitor(f, writer, server.world.clock.now, origin=START, interval=HOUR,
                         domain_of=virtual_host_domain(), discover="/site/[^/]+/wiki/", max_pages=30,
                         revalidator=Revalidator(f, on_outcome=metrics.revisit_outcome("revisits"))), f


def test_unchanged_pages_answer_304_are_snapshots_without_change_archived_and_counted(world, tmp_path):
    clock, web = world.world.clock, world.world.web
    clock.set(START + 2 * 86400)
    writer, metrics = SnapshotWriter(str(tmp_path / "page_snapshots")), Metrics("revisitor")
    archive = WarcArchive(tmp_path / "warc", prefix="revisitor")
    rev, f = revisitor(world, writer, metrics, archive)
    rev.add([world.url + web.page_path(web.pages_of_host[h][0]) for h in web.hosts])
    drain(rev)
    writer.flush()
    clock.advance(HOUR)
    drain(rev)
    writer.flush()
    f.close()
    archive.close()

    from deltalake import DeltaTable

    rows = DeltaTable(writer.table_path).to_pandas()
    first, second = rows[rows["period"] == rows["period"].min()], rows[rows["period"] == rows["period"].max()]
    assert len(first) == len(second) == 30 and set(first["revisit_outcome"]) == {NEW}
    ignoring = world.world.validators.ignoring(web.hosts)
    by_outcome = second.groupby("revisit_outcome")["url"].apply(set).to_dict()
    honouring = {u for u in second["url"] if u.split("/site/")[1].split("/")[0] not in ignoring}
    assert by_outcome[NOT_MODIFIED] and by_outcome[SAME_BODY]  # both kinds of unchanged pages were met
    assert by_outcome[NOT_MODIFIED] <= honouring and not (by_outcome[SAME_BODY] & honouring)
    not_modified = second[second["revisit_outcome"] == NOT_MODIFIED]
    assert (not_modified["status"] == 304).all() and not_modified["unchanged"].all()
    # A 304 repeats its page's last content: the look-back targets see no new outlink and no content change.
    merged = not_modified.merge(first, on="url", suffixes=("", "_before"))
    assert (merged["content_digest"] == merged["content_digest_before"]).all()
    assert all(list(a) == list(b) for a, b in zip(merged["internal_outlinks"], merged["internal_outlinks_before"]))
    t = targets(rows).set_index("url").loc[sorted(by_outcome[NOT_MODIFIED] | by_outcome[SAME_BODY])]
    assert (t["nnl_int"] + t["nnl_ext"] == 0).all() and not t["content_changed"].any()
    # Counted: 304s, the bytes they saved (each page's last full body), bodies fetched whole for nothing.
    snap = metrics.snapshot()
    saved = int(first.set_index("url").loc[sorted(by_outcome[NOT_MODIFIED]), "body_length"].sum())
    assert snap["not_modified_total"] == len(by_outcome[NOT_MODIFIED]) and snap["bytes_saved_total"] == saved > 0
    assert snap["unchanged_bodies_total"] == len(by_outcome[SAME_BODY])
    assert rev.revalidator.status()["bytes_saved"] == saved
    # Each 304 is a WARC 1.1 server-not-modified revisit record that warcio reads, at the row's offset.
    revisits = {}
    for name in archive.files:
        with open(tmp_path / "warc" / name, "rb") as fh:
            for r in ArchiveIterator(fh):
                if r.rec_type == "revisit":
                    revisits[r.rec_headers.get_header("WARC-Record-ID")] = r.rec_headers.get_header("WARC-Profile")
    assert set(not_modified["warc_record_id"]) == set(revisits)
    assert set(revisits.values()) == {NOT_MODIFIED_PROFILE}


def test_a_restart_keeps_the_validators(world, tmp_path):
    """A new process rebuilt from the table sends the validators its predecessor got: its first revisit of
    an unchanged page is a 304, and the snapshot it lands repeats the landed content."""
    clock, web = world.world.clock, world.world.web
    clock.set(START + 3 * 86400)
    honouring = [h for h in web.hosts if h not in world.world.validators.ignoring(web.hosts)]
    seeds = [world.url + web.page_path(web.pages_of_host[h][1]) for h in honouring]
    writer = SnapshotWriter(str(tmp_path / "page_snapshots"))
    rev, f = revisitor(world, writer, Metrics("revisitor"))
    rev.add(seeds)
    drain(rev)
    writer.flush()
    f.close()
    del rev  # the process is gone; only the table is left

    clock.advance(HOUR)
    again, f = revisitor(world, writer, Metrics("revisitor"))
    again.restore(writer.history(), seeds=seeds, latest=writer.latest())  # as streaming/revisitor.py does
    landed = writer.latest()
    assert set(again.revalidator.known) == set(landed) >= set(seeds)
    assert all(again.revalidator.known[u].etag == row["etag"] for u, row in landed.items())
    drain(again)
    writer.flush()
    f.close()
    from deltalake import DeltaTable

    rows = DeltaTable(writer.table_path).to_pandas()
    later = rows[rows["period"] == rows["period"].max()].set_index("url")
    assert NEW not in set(later.loc[sorted(landed), "revisit_outcome"])  # no landed page fetched as if never seen
    unchanged = later[later["revisit_outcome"] == NOT_MODIFIED]
    assert len(unchanged) >= len(landed) // 2, later["revisit_outcome"].value_counts()
    earlier = rows[rows["period"] == rows["period"].min()].set_index("url")
    assert (unchanged["text"] == earlier.loc[unchanged.index, "text"]).all()


def page(body: str, canonical: str | None = None) -> tuple[int, dict, bytes]:
    head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    return 200, {"Content-Type": "text/html"}, f"<html><head>{head}</head><body>{body}</body></html>".encode()


def test_redirects_and_rel_canonical_map_to_one_key_and_aliases_survive_a_restart(tmp_path):
    routes = {
        "/robots.txt": (200, {}, b"User-agent: *\nAllow: /\n"),
        "/real": page('<p>the page</p><a href="/other">o</a>'),
        "/old": (301, {"Location": "/moved?utm_source=x"}, b""),
        "/moved?utm_source=x": (302, {"Location": "/real"}, b""),
        "/print": page("<p>the page, printable</p>", canonical="/real?utm_medium=email"),
        "/stranger": page("<p>claims another site</p>", canonical="http://elsewhere.example/real"),
    }
    with HttpSite(routes) as site:
        base = f"http://127.0.0.1:{site.port}"
        writer = SnapshotWriter(str(tmp_path / "page_snapshots"))
        now = [0.0]
        f = fetcher(base)
        rev = PageRevisitor(f, writer, lambda: now[0], revalidator=Revalidator(f))
        rev.add([base + "/old", base + "/print", base + "/stranger", base + "/real"])
        drain(rev)
        writer.flush()
        rows = writer.history()
        assert sorted((u, a) for u, _, _, a in rows) == [(base + "/real", base + "/old"), (base + "/stranger", None)]
        assert rev.aliases == {base + "/old": base + "/real", base + "/print": base + "/real"}
        assert base + "/old" not in rev.ranking and base + "/real" in rev.ranking
        # a variant of an alias is the alias: known as the page it leads to
        assert rev.key(base.replace("127.0.0.1", "127.0.0.1.") + "/old?fbclid=1#x") == base + "/real"
        # next period: the aliases are not fetched again
        site.log.clear()
        now[0] += 7 * 86400
        drain(rev)
        assert sorted(p for _, p in site.log if p != "/robots.txt") == ["/real", "/stranger"]
        f.close()

        again = PageRevisitor(fetcher(base), writer, lambda: now[0])
        again.restore(writer.history())
        assert again.aliases == {base + "/old": base + "/real"}  # from fetched_url; /print's fetch was the duplicate
        again.add([base + "/old"])
        assert len(again.ranking) == 2


def test_every_url_the_revisitor_keys_by_is_its_canonical_key():
    """Seeds, discovered outlinks and pushed priorities: a URL spelled another way is the same page."""
    rows = []
    pages = {"http://a.example/p?x=1": b'<a href="HTTP://A.example:80/q?utm_source=t&b=2&a=1#f">q</a>'}
    site = type("Site", (), {"get": lambda self, url: pages.get(url, b"<p>leaf</p>")})()
    rev = PageRevisitor(site, rows.append, lambda: 0.0, discover="/")
    rev.add(["http://A.example/p?x=1&fbclid=abc", "http://a.example:80/p?x=1#top"])
    assert [u for u, _ in rev.ranking.items()] == ["http://a.example/p?x=1"]
    rev.revisit_next()
    assert "http://a.example/q?a=1&b=2" in rev.ranking and len(rev.ranking) == 2
    rev.apply_priority("http://a.example/q?b=2&a=1&utm_campaign=z", 0.9)
    assert rev.ranking.score_of("http://a.example/q?a=1&b=2") == 0.9
    custom = PageRevisitor(site, rows.append, lambda: 0.0,
                           key_of=lambda url: canonical_url(url, extra_strip=("ref",)))
    custom.add(["http://a.example/p?x=1&ref=home"])
    assert [u for u, _ in custom.ranking.items()] == ["http://a.example/p?x=1"]


class CountingScorer:
    """A page scorer whose every call gives a new score: a repeated score was carried, not scored again."""

    def __init__(self):
        self.calls = 0

    def score(self, main_text, language):
        self.calls += 1
        return float(self.calls), "STUB/v1"

    def relevant(self, score):
        return score is not None and score >= 1


def test_a_304_snapshot_carries_the_previous_main_text_language_and_relevance(world, tmp_path):
    clock, web = world.world.clock, world.world.web
    clock.set(START + 4 * 86400)
    honouring = [h for h in web.hosts if h not in world.world.validators.ignoring(web.hosts)]
    writer, scorer = SnapshotWriter(str(tmp_path / "page_snapshots")), CountingScorer()
    rev, f = revisitor(world, writer, Metrics("revisitor"))
    rev.relevance = scorer
    rev.add([world.url + web.page_path(web.pages_of_host[h][2]) for h in honouring])
    drain(rev)
    writer.flush()
    clock.advance(HOUR)
    drain(rev)
    writer.flush()
    f.close()
    from deltalake import DeltaTable

    rows = DeltaTable(writer.table_path).to_pandas()
    first = rows[rows["period"] == rows["period"].min()].set_index("url")
    second = rows[rows["period"] == rows["period"].max()].set_index("url")
    assert first["main_text"].str.len().gt(0).all() and first["relevance"].notna().all()
    carried = second[second["revisit_outcome"] == NOT_MODIFIED]
    assert len(carried) > 0
    before = first.loc[carried.index]
    for col in ("main_text", "language", "language_score", "relevance", "relevance_model"):
        assert (carried[col] == before[col]).all(), col
    assert scorer.calls == len(first) + (len(second) - len(carried))  # a 304 is not scored again
    assert rev.status()["relevant"] == len(first) + len(second)
