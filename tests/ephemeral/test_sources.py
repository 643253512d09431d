"""Content sources of seed 001: hubs, category pages, RSS/Atom feeds and sitemaps found and read,
on the world's own bodies and on crawler-commons' real (and broken) files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from focuscrawl.ephemeral.sources import discover_sources, read_source, timestamp
from tests.ephemeral.world_pages import BASE, world_fetch


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from focuscrawl.world import build_world

    w = build_world(3, data_dir=None, users=500, cache_dir=tmp_path_factory.mktemp("world"), paused=True)
    w.clock.advance(6 * 3600)
    return w


@pytest.fixture(scope="module")
def fetch(world):
    return world_fetch(world)


def _truth(world, path: str) -> list[tuple[str, float]]:
    src = world.web.source_at[path]
    times = world.web.published(src.num, world.clock.now())
    return [(f"{BASE}/site/{src.host}/n/{src.num}-{k}", t) for k, t in enumerate(times)]


@pytest.mark.parametrize("tail, kind", [("feed.rss", "feed"), ("feed.atom", "feed"), ("sitemap.xml", "sitemap"), ("", "hub")])
def test_every_kind_of_world_source_reads_its_newest_links_with_their_publication_times(world, fetch, tail, kind):
    host = world.web.hosts[0]
    path = f"/site/{host}/{tail}"
    body, media, url = fetch(BASE + path)
    listing = read_source(body, url, media)
    assert listing.kind == kind
    assert listing.rejections == []  # relative sitemap <loc>s are resolved, not rejected
    # The world draws publications lazily and a later read may add some (see the report), so the
    # truth is read after the fetch: every entry is a real page with its publication second.
    truth = {(u, float(int(t))) for u, t in _truth(world, path)}
    entries = {(e.url, e.published) for e in listing.entries}
    assert len(entries) == len(listing.entries) >= 5
    assert entries <= truth


def test_discovery_finds_front_page_categories_feeds_and_the_robots_sitemap(world, fetch):
    host = world.web.hosts[1]
    found, rejections = discover_sources(fetch, f"{BASE}/site/{host}/")
    expected = {BASE + s.path for s in world.web.sources if s.host == host}
    assert {s.url for s in found} == expected
    kinds = Counter(s.kind for s in found)
    assert kinds["feed"] == 2 and kinds["sitemap"] == 1 and kinds["hub"] == len(expected) - 3
    assert {s.host for s in found} == {"127.0.0.1:9"}
    assert rejections == []


RESOURCES = ["crawler-commons", "src", "test", "resources"]


@pytest.mark.parametrize("name, media, kind, first", [
    ("rss/xmlRss_pubDate.xml", "application/rss+xml", "feed", ("http://www.example.com/article_1", "2017-01-05T12:34:51Z")),
    ("sitemaps/atom.xml", "application/xml", "feed", ("http://example.org/2003/12/13/atom03.html", "2003-12-13T18:30:02Z")),
    ("sitemaps/xmlSitemap.gz", "application/x-gzip", "sitemap", ("http://www.example.com/", "2005-01-01")),
    ("sitemaps/sitemap-with-bom.txt", "text/plain", "sitemap", ("http://www.domain.com/page1.html", None)),
    ("sitemaps/sitemap.badns.xml", "application/xml", "sitemap", ("http://www.example.com/1", None)),
])
def test_real_feeds_and_sitemaps_from_crawler_commons(shared_data, name, media, kind, first):
    body = Path(shared_data, *RESOURCES, name).read_bytes()
    listing = read_source(body, f"http://www.example.com/{name}", media)
    assert listing.kind == kind
    assert (listing.entries[0].url, listing.entries[0].published) == (first[0], timestamp(first[1]))


def test_broken_sources_become_rejections_never_exceptions():
    truncated = read_source(b"<rss><channel><item><title>x</ti", "http://e.example/f", "application/rss+xml")
    assert truncated.entries == [] and any("not well-formed" in r.reason for r in truncated.rejections)
    corrupt = read_source(b"\x1f\x8b not gzip", "http://e.example/s.gz", "application/x-gzip")
    assert corrupt.kind == "" and corrupt.rejections[0].reason.startswith("corrupt gzip")
    bad_loc = read_source(b'<urlset><url><loc>javascript:x()</loc></url><url><loc>/a</loc></url></urlset>',
                          "http://e.example/sitemap.xml", "application/xml")
    assert [e.url for e in bad_loc.entries] == ["http://e.example/a"] and len(bad_loc.rejections) == 1


def test_timestamps_of_rss_atom_and_sitemap_dates():
    assert timestamp("Thu, 05 Jan 2017 13:34:51 +0100") == 1483619691.0
    assert timestamp("2017-01-05T12:34:51Z") == 1483619691.0
    assert timestamp("2017-01-05") == 1483574400.0
    assert timestamp("yesterday") is None and timestamp(None) is None


def test_every_url_a_source_lists_is_its_canonical_key():
    """Sitemap locs, feed links, hub links (dated or not) and the feeds a hub names: one key per page."""
    from focuscrawl.ephemeral.sources import read_source
    from focuscrawl.parse.canon import canonical_url

    sitemap = (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
               b"<url><loc>http://A.example:80/x?utm_source=a&amp;b=1</loc><lastmod>2024-01-02</lastmod></url>"
               b"<url><loc>http://a.example/x?b=1#top</loc><lastmod>2024-01-01</lastmod></url></urlset>")
    listing = read_source(sitemap, "http://a.example/sitemap.xml", "application/xml")
    assert [(e.url, e.published) for e in listing.entries] == [("http://a.example/x?b=1", 1704153600.0)]
    rss = (b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
           b"<item><link>http://a.example/y;jsessionid=123?fbclid=z</link></item></channel></rss>")
    assert [e.url for e in read_source(rss, "http://a.example/feed", "application/rss+xml").entries] == \
        ["http://a.example/y"]
    hub = (b'<html><head><link rel="alternate" type="application/rss+xml" href="/Feed?utm_medium=x"></head><body>'
           b'<li><a href="/n/1?gclid=q">one</a> <time datetime="2024-01-01T00:00:00Z">x</time></li>'
           b'<a href="/c/Cat?ref=nav">cat</a></body></html>')
    keyed = read_source(hub, "http://a.example/", "text/html",
                        key_of=lambda url: canonical_url(url, extra_strip=("ref",)))
    assert [(e.url, e.published) for e in keyed.entries] == [("http://a.example/n/1", 1704067200.0)]
    assert keyed.navigation == ["http://a.example/c/Cat", "http://a.example/Feed"]
