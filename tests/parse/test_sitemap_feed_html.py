import gzip
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from focuscrawl.parse.feed import parse_feed
from focuscrawl.parse.html import parse_links, registered_domain, unparsable
from focuscrawl.parse.sitemap import MAX_URLS, parse_sitemap

BASE = "http://www.example.com/"


@pytest.fixture(scope="module")
def resources(shared_data):
    return Path(shared_data) / "crawler-commons" / "src" / "test" / "resources"


# file -> (kind, number of page URLs, number of child sitemaps)
SITEMAPS = {
    "atom.xml": ("atom", 1, 0),
    "do-not-visit.txt": ("text", 1, 0),
    "sitemap-with-bom.txt": ("text", 2, 0),
    "sitemap.badns.xml": ("urlset", 2, 0),
    "sitemap.index.xml": ("sitemapindex", 0, 15),
    "sitemap.ns.xml": ("urlset", 2, 0),
    "sitemap.txt": ("text", 2, 0),
    "sitemap.txt.gz": ("text", 5, 0),
    "xmlSitemap.gz": ("urlset", 5, 0),
    "extension/hebdenbridgetimes-articles-sitemap.xml": ("urlset", 74, 0),
    "extension/pagemaps-sitemap.xml": ("urlset", 2, 0),
    "extension/shinpaideshou-news-sitemap.xml": ("urlset", 3, 0),
    "extension/sitemap-images.xml": ("urlset", 1, 0),
    "extension/sitemap-links.xml": ("urlset", 3, 0),
    "extension/sitemap-mobile.xml": ("urlset", 3, 0),
    "extension/sitemap-news.xml": ("urlset", 2, 0),
    "extension/sitemap-videos-tvshow.xml": ("urlset", 1, 0),
    "extension/sitemap-videos.xml": ("urlset", 3, 0),
}


def test_every_sitemap_file_parses(resources):
    files = sorted(str(p.relative_to(resources / "sitemaps")) for p in (resources / "sitemaps").rglob("*") if p.is_file())
    assert files == sorted(SITEMAPS)
    for name, (kind, urls, sitemaps) in SITEMAPS.items():
        parsed = parse_sitemap((resources / "sitemaps" / name).read_bytes(), BASE + name)
        assert (parsed.kind, len(parsed.urls), len(parsed.sitemaps), parsed.rejections) == (kind, urls, sitemaps, []), name


def test_sitemap_fields_entities_whitespace_and_bom(resources):
    parsed = parse_sitemap((resources / "sitemaps" / "xmlSitemap.gz").read_bytes(), BASE)
    first, second = parsed.urls[:2]
    assert (first.loc, first.lastmod, first.changefreq, first.priority) == ("http://www.example.com/", "2005-01-01", "monthly", 0.8)
    assert second.loc == "http://www.example.com/catalog?item=12&desc=vacation_hawaii"
    assert parse_sitemap((resources / "sitemaps" / "sitemap.badns.xml").read_bytes(), BASE).urls[1].loc == "http://www.example.com/2"
    assert [u.loc for u in parse_sitemap((resources / "sitemaps" / "sitemap-with-bom.txt").read_bytes(), BASE).urls] == [
        "http://www.domain.com/page1.html", "http://www.domain.com/page2.html"]
    index = parse_sitemap((resources / "sitemaps" / "sitemap.index.xml").read_bytes(), BASE)
    assert index.sitemaps[0] == "https://example.com/sitemap.jss?portalCode=10260&lang=en"


@pytest.mark.parametrize(
    "body,reason",
    [
        (b"", None),
        (b"<html><body>hello</body></html>", "root element <html> is not urlset"),
        (b"<urlset><url><loc>http://a.example/1</loc></url><url><loc>", "XML is not well-formed"),
        (gzip.compress(b"x", mtime=0)[:10] + b"\xff" * 10, "corrupt gzip"),
        (gzip.compress(b"<urlset>", mtime=0)[:-6], "truncated gzip"),
        (b"just some words\nand more", "not a sitemap: neither XML nor lines of http(s) URLs"),
        (b"<?xml version='1.0'?>", "not well-formed XML"),
    ],
)
def test_malformed_sitemaps_are_rejected_with_reason(body, reason):
    parsed = parse_sitemap(body, BASE)
    if reason is None:
        assert parsed.urls == [] and parsed.rejections == []
    else:
        assert any(r.reason.startswith(reason) for r in parsed.rejections), [r.reason for r in parsed.rejections]


def test_sitemap_entries_without_valid_loc_are_rejected_one_by_one():
    body = (b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://a.example/ok</loc></url>'
            b"<url><loc>javascript:alert(1)</loc></url><url><lastmod>2020</lastmod></url></urlset>")
    parsed = parse_sitemap(body, BASE)
    assert [u.loc for u in parsed.urls] == ["http://a.example/ok"]
    assert [r.reason for r in parsed.rejections] == [
        "<url> without a valid <loc> (got 'javascript:alert(1)': scheme 'javascript' is not http or https)",
        "<url> without a valid <loc> (got None: empty URL)"]
    assert b"<lastmod>2020</lastmod>" in parsed.rejections[1].payload


def test_no_external_entities_and_no_bombs(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    xxe = (f'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file://{secret}">]>'
           '<urlset><url><loc>http://a.example/&x;</loc></url></urlset>').encode()
    parsed = parse_sitemap(xxe, BASE)
    assert all("TOPSECRET" not in u.loc for u in parsed.urls)
    bomb = gzip.compress(b"\n" * (60 * 1024 * 1024))
    assert parse_sitemap(bomb, BASE).rejections[0].reason.startswith("gzip expands beyond")
    many = "\n".join(f"http://a.example/{i}" for i in range(MAX_URLS + 3)).encode()
    parsed = parse_sitemap(many, BASE)
    assert len(parsed.urls) == MAX_URLS and parsed.rejections[0].payload.count("\n") == 2


def test_feeds_parse(resources):
    rss = parse_feed((resources / "rss" / "feed.rss").read_bytes(), BASE + "feed.rss")
    assert rss.version == "rss20" and rss.title == "RSS Title" and rss.rejections == []
    assert [e.url for e in rss.entries] == [
        "https://www.example.com/blog/post/1", "https://www.example.com/guid.html",
        "https://www.example.com/foo?q=a&l=en", "https://www.example.com/foo?q=a&l=fr"]
    dated = parse_feed((resources / "rss" / "xmlRss_pubDate.xml").read_bytes(), BASE)
    assert len(dated.entries) == 7 and dated.entries[0].published == "Thu, 05 Jan 2017 13:34:51 +0100"
    atom = parse_feed((resources / "sitemaps" / "atom.xml").read_bytes(), BASE)
    assert atom.version == "atom10" and [e.url for e in atom.entries] == ["http://example.org/2003/12/13/atom03.html"]


def test_malformed_feeds_are_rejected():
    assert parse_feed(b"hello world", BASE).rejections[0].reason.startswith("not an RSS or Atom feed")
    broken = parse_feed(b"<rss><channel><item><link>http://a.example/1</link></item><item><title>x</title></item>", BASE)
    assert [e.url for e in broken.entries] == ["http://a.example/1"]
    reasons = [r.reason for r in broken.rejections]
    assert reasons[0] == "feed entry has no http(s) link" and reasons[1].startswith("feed is not well-formed")


def test_feed_body_is_never_taken_for_a_path_or_url(tmp_path):
    secret = tmp_path / "feed.xml"
    secret.write_bytes(b"<rss><channel><item><link>http://leak.example/</link></item></channel></rss>")
    assert parse_feed(str(secret).encode(), BASE).entries == []
    assert parse_feed(str(secret), BASE).entries == []


def test_html_links():
    page = (b'<html><head><base href="/dir/"><meta name="ROBOTS" content="index"></head><body>'
            b'<a href="a.html">A <i>one</i></a> <a href="https://other.org/x#f" rel="NoFollow">o</a>'
            b'<a href="http://sub.example.com/s">s</a><a href="#top">t</a><a href="mailto:x@y">m</a>'
            b'<a href="http://[::1/">bad</a><area href="/map"></body></html>')
    parsed = parse_links(page, "http://www.example.com/p/q.html")
    assert [(l.url, l.text, l.nofollow, l.internal) for l in parsed.links] == [
        ("http://www.example.com/dir/a.html", "A one", False, True),
        ("https://other.org/x", "o", True, False),
        ("http://sub.example.com/s", "s", False, True),
        ("http://www.example.com/map", "", False, True),
    ]
    assert parsed.skipped == 2 and parsed.base == "http://www.example.com/dir/"
    assert [r.reason for r in parsed.rejections] == ["link href 'http://[::1/' is not a valid http(s) URL"]
    nofollow_page = parse_links(b'<meta name="robots" content="noindex, nofollow"><a href="/x">x</a>', "http://h.example/")
    assert nofollow_page.links[0].nofollow


def test_registered_domain():
    assert registered_domain("www.bbc.co.uk") == "bbc.co.uk"
    assert registered_domain("a.b.example.com") == "example.com"
    assert registered_domain("127.0.0.1") == "127.0.0.1"
    assert registered_domain("localhost") == "localhost"
    # the public suffix list, private section included (issue 31)
    assert registered_domain("www.abc.net.au") == "abc.net.au"
    assert registered_domain("docs.alice.github.io") == "alice.github.io"


def test_html_links_are_canonical_keys():
    """Every spelling of one page is one outlink (issue 31): case, default port, tracking and session
    parameters, query order; the page itself, spelled differently, is skipped."""
    page = (b'<meta charset="utf-8"><a href="HTTP://Shop.Example.com:80/item?id=3&page=1&utm_source=feed#reviews">a</a>'
            b'<a href="/item;jsessionid=0AB1?page=1&id=3&PHPSESSID=x">b</a>'
            b'<a href="https://m\xc3\xbcnchen.de/stra%c3%9fe?fbclid=1">c</a>'
            b'<a href="/list?b=2&a=1&utm_medium=x">self</a>'
            b'<a href="http://alice.github.io/">gh</a>')
    parsed = parse_links(page, "http://shop.example.com/list?a=1&b=2#top")
    assert [(l.url, l.internal) for l in parsed.links] == [
        ("http://shop.example.com/item?id=3&page=1", True),
        ("http://shop.example.com/item?id=3&page=1", True),
        ("https://xn--mnchen-3ya.de/stra%C3%9Fe", False),
        ("http://alice.github.io/", False),
    ]
    assert parsed.skipped == 1


def test_empty_html_is_rejected():
    assert parse_links(b"  \n", BASE).rejections[0].reason == "empty HTML body"


def test_a_body_with_a_nul_byte_is_rejected_whole():
    """The world's malformed page (a third of the page, then ``<<{"`` and a NUL) and a binary body are
    no page: one rejection with the reason and the whole body, no links; a NUL-free broken page still parses."""
    good = b'<html><body><p>Text</p><a href="/a">a</a><a href="/b">b</a></body></html>'
    for body in (good[: len(good) // 3] + b'<<{"\x00', b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"):
        parsed = parse_links(body, BASE)
        assert unparsable(body) == parsed.rejections[0].reason and parsed.links == []
        assert parsed.rejections[0].reason.startswith("NUL byte in the HTML body") and parsed.rejections[0].payload == body
    assert unparsable(good[: len(good) // 2]) is None and len(parse_links(good[: len(good) // 2], BASE).links) == 1


fuzz = settings(max_examples=200, deadline=None)
xmlish = st.lists(st.sampled_from(["<urlset>", "</urlset>", "<url>", "</url>", "<loc>", "</loc>", "http://a.example/x",
                                   "<sitemapindex>", "<sitemap>", "<rss>", "<item>", "<link>", "</link>", "<feed>",
                                   "<entry>", '<link href="http://b.example/"/>', "&amp;", "&x;", "<![CDATA[", "]]>",
                                   "\x00", "\ufeff", "<?xml version='1.0'?>", "<!DOCTYPE x>", "<a href='/q'>", "</a>",
                                   "<base href='//c.example/'>", "\n"]), max_size=30).map("".join)


@fuzz
@given(st.one_of(st.binary(max_size=2000), xmlish.map(str.encode)))
def test_sitemap_never_crashes(body):
    parsed = parse_sitemap(body, BASE)
    assert parsed.kind or parsed.rejections or not body.strip()


@fuzz
@given(st.one_of(st.binary(max_size=2000), xmlish.map(str.encode)))
def test_sitemap_gzipped_never_crashes(body):
    parse_sitemap(gzip.compress(body), BASE)


@fuzz
@given(st.one_of(st.binary(max_size=2000), xmlish.map(str.encode)))
def test_feed_never_crashes(body):
    parsed = parse_feed(body, BASE)
    assert parsed.version or parsed.rejections


@fuzz
@given(st.one_of(st.binary(max_size=2000), xmlish.map(str.encode), st.text(max_size=500)))
def test_html_never_crashes(body):
    parsed = parse_links(body, BASE)
    assert all(l.url.startswith(("http://", "https://")) for l in parsed.links)


@pytest.mark.parametrize("url,reason", [
    ("http://exa mple.com/", "white space"),
    ("http://exa<mple.com/", "no host name may hold"),
    ("http://exa%41mple.com/", "no host name may hold"),
    ("http://-bad-.example/", "no host name may hold"),
    ("http://" + "a" * 64 + ".example/", "no host name may hold"),
    ("http://example.com:0/", "port 0"),
    ("http://example.com:99999/", "cannot be parsed"),
    ("http://evil.example\\@good.example/", "backslash"),
    ("http://evil.example\\.good.example/", "backslash"),
    ("http://user:pw@good.example/", "user info"),
    ("http://good.example@evil.example/", "user info"),
    ("http://[::1x]/", "cannot be parsed"),
    ("ftp://example.com/", "scheme"),
    ("http:///path", "no host"),
])
def test_urls_no_reader_agrees_on_are_refused_with_a_reason(url, reason):
    from focuscrawl.parse.sitemap import url_problem, valid_url

    assert valid_url(url) is None
    assert reason in url_problem(url)
    parsed = parse_sitemap(url.encode() + b"\nhttp://ok.example/a\n", BASE)
    assert [u.loc for u in parsed.urls] == ["http://ok.example/a"]
    assert reason in parsed.rejections[0].reason


@pytest.mark.parametrize("url", ["http://example.com/a", "https://xn--bcher-kva.example/", "http://bücher.example/",
                                 "http://my_blog.example/", "http://[2606:4700::1111]:8080/x", "http://93.184.216.34/",
                                 "http://example.com.:8080/"])
def test_real_urls_still_pass(url):
    from focuscrawl.parse.sitemap import valid_url

    assert valid_url(url) == url


def test_mojibake_is_flagged_not_silent():
    text = parse_sitemap(b"http://ok.example/caf\xe9\nhttp://ok.example/b\n", BASE)
    assert len(text.urls) == 2 and any("not valid UTF-8" in r.reason for r in text.rejections)
    feed = parse_feed(b'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>t</title>'
                      b"<item><title>caf\xe9</title><link>http://ok.example/1</link></item></channel></rss>", BASE)
    assert [e.url for e in feed.entries] == ["http://ok.example/1"]
    assert any("encoding recovered" in r.reason for r in feed.rejections)
