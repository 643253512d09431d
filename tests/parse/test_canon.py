"""Canonical URL keys and registered domains (issue 31, point 1): every spelling of one page maps to one key."""

from __future__ import annotations

import pytest

from focuscrawl.parse.canon import TRACKING_PARAMS, canonical_url, registered_domain

CASES = [
    # host case, trailing dot, default ports
    ("HTTP://WWW.Example.COM/", "http://www.example.com/"),
    ("http://www.example.com", "http://www.example.com/"),
    ("http://www.example.com./index.html", "http://www.example.com/index.html"),
    ("http://www.example.com:80/", "http://www.example.com/"),
    ("https://www.example.com:443/a", "https://www.example.com/a"),
    ("https://www.example.com:80/a", "https://www.example.com:80/a"),
    ("http://www.example.com:443/a", "http://www.example.com:443/a"),
    ("http://localhost:8080/x", "http://localhost:8080/x"),
    ("http://127.0.0.1:18090/p?b=1&a=2", "http://127.0.0.1:18090/p?a=2&b=1"),
    ("http://[2001:DB8::1]:80/x", "http://[2001:db8::1]/x"),
    ("http://[2001:db8::1]:8443/x", "http://[2001:db8::1]:8443/x"),
    # fragments
    ("https://en.wikipedia.org/wiki/Web_crawler#History", "https://en.wikipedia.org/wiki/Web_crawler"),
    ("https://example.com/app#!/route", "https://example.com/app"),
    # query order, blank values, an empty query
    ("https://shop.example/search?q=shoes&page=2&color=red", "https://shop.example/search?color=red&page=2&q=shoes"),
    # w3lib sorts repeated names by value as well
    ("https://example.com/?b=2&a=1&a=0", "https://example.com/?a=0&a=1&b=2"),
    ("https://example.com/p?", "https://example.com/p"),
    ("https://example.com/p?flag", "https://example.com/p?flag="),
    ("https://example.com/p?&&a=1&", "https://example.com/p?a=1"),
    # percent-encoding
    ("http://example.com/%7Euser/", "http://example.com/~user/"),
    ("http://example.com/%7euser/", "http://example.com/~user/"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/a b/c d.html", "http://example.com/a%20b/c%20d.html"),
    ("http://example.com/caf%c3%a9", "http://example.com/caf%C3%A9"),
    ("http://example.com/café", "http://example.com/caf%C3%A9"),
    ("http://example.com/search?q=a+b", "http://example.com/search?q=a+b"),
    ("http://example.com/search?q=a%20b", "http://example.com/search?q=a+b"),
    ("http://example.com/search?q=%e4", "http://example.com/search?q=%E4"),
    ("http://example.com/?q=%C3%BC", "http://example.com/?q=%C3%BC"),
    ("http://example.com/?q=ü", "http://example.com/?q=%C3%BC"),
    # dot segments
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/a/b/../../index.html", "http://example.com/index.html"),
    # internationalised domain names
    ("http://münchen.de/", "http://xn--mnchen-3ya.de/"),
    ("http://MÜNCHEN.de/", "http://xn--mnchen-3ya.de/"),
    ("http://xn--mnchen-3ya.de/", "http://xn--mnchen-3ya.de/"),
    ("https://例え.jp/パス", "https://xn--r8jz45g.jp/%E3%83%91%E3%82%B9"),
    ("http://bücher.example:80/", "http://xn--bcher-kva.example/"),
    ("https://пример.рф/", "https://xn--e1afmkfd.xn--p1ai/"),
    # tracking parameters
    ("https://www.nytimes.com/2024/x.html?utm_source=twitter&utm_medium=social&utm_campaign=a",
     "https://www.nytimes.com/2024/x.html"),
    ("https://example.com/p?id=7&UTM_Content=x", "https://example.com/p?id=7"),
    ("https://example.com/p?fbclid=IwAR0abc", "https://example.com/p"),
    ("https://example.com/p?gclid=Cj0K&q=1", "https://example.com/p?q=1"),
    ("https://example.com/p?msclkid=1&mc_cid=2&mc_eid=3&_ga=4&yclid=5", "https://example.com/p"),
    # session ids, in the query and as ;path parameters
    ("http://shop.example/cart.php?PHPSESSID=9f8e7d&item=4", "http://shop.example/cart.php?item=4"),
    ("http://shop.example/view?sessionid=abc&id=1", "http://shop.example/view?id=1"),
    ("http://shop.example/a/b.jsp;jsessionid=0AB12CD34?x=1", "http://shop.example/a/b.jsp?x=1"),
    ("http://shop.example/a;JSESSIONID=0AB12CD34/b.jsp", "http://shop.example/a/b.jsp"),
    ("http://shop.example/a;v=2;jsessionid=1/b", "http://shop.example/a;v=2/b"),
    ("http://asp.example/default.asp?ASPSESSIONIDQQGGGNCG=LKJ&p=1", "http://asp.example/default.asp?p=1"),
    # parameters that are not tracking stay
    ("https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42", "https://www.youtube.com/watch?t=42&v=dQw4w9WgXcQ"),
    ("https://news.ycombinator.com/item?id=1", "https://news.ycombinator.com/item?id=1"),
    # user info is kept, scheme lower-cased
    ("HTTPS://user:pw@Example.com:8443/", "https://user:pw@example.com:8443/"),
    # trailing slash is significant to servers: kept as written
    ("https://example.com/dir", "https://example.com/dir"),
    ("https://example.com/dir/", "https://example.com/dir/"),
]


def test_case_table_is_large():
    assert len(CASES) >= 40


@pytest.mark.parametrize(("url", "key"), CASES, ids=[c[0] for c in CASES])
def test_canonical_url(url, key):
    assert canonical_url(url) == key
    assert canonical_url(key) == key  # a key is its own key


def test_variants_of_one_page_share_a_key():
    variants = [
        "http://Example.com/story?id=3&page=1",
        "http://example.com:80/story?page=1&id=3",
        "http://example.com./story?page=1&id=3#comments",
        "http://example.com/story?page=1&id=3&utm_source=feed&fbclid=x",
        "http://example.com/story;jsessionid=AB12?id=3&page=1&PHPSESSID=q",
        "http://example.com/./x/../story?id=%33&page=1",
    ]
    assert len({canonical_url(v) for v in variants}) == 1


def test_per_site_overrides():
    url = "https://shop.example/p?id=1&ref=home&sid=9"
    assert canonical_url(url) == "https://shop.example/p?id=1&ref=home&sid=9"
    assert canonical_url(url, extra_strip=["ref", "sid"]) == "https://shop.example/p?id=1"
    # replacing the defaults altogether: keep utm_* on a site whose pages depend on them
    assert canonical_url("https://a.example/?utm_source=x", strip=()) == "https://a.example/?utm_source=x"
    assert "utm_*" in TRACKING_PARAMS


@pytest.mark.parametrize("bad", ["http://example.com:99999/", "http://example.com:abc/", "http://[::1/"])
def test_unparseable_raises_value_error(bad):
    with pytest.raises(ValueError):
        canonical_url(bad)


DOMAINS = [
    ("www.example.com", "example.com"),
    ("a.b.c.example.com", "example.com"),
    ("example.com", "example.com"),
    ("WWW.Example.COM.", "example.com"),
    ("news.bbc.co.uk", "bbc.co.uk"),
    ("bbc.co.uk", "bbc.co.uk"),
    ("www.abc.net.au", "abc.net.au"),
    ("www.city.kawasaki.jp", "city.kawasaki.jp"),  # an exception rule (!city.kawasaki.jp)
    ("a.b.kawasaki.jp", "a.b.kawasaki.jp"),  # a wildcard rule (*.kawasaki.jp)
    ("www.gov.uk", "www.gov.uk"),  # gov.uk is itself a suffix
    ("example.co", "example.co"),
    ("www.example.com.br", "example.com.br"),
    # private suffixes: each user's site is its own registered domain
    ("alice.github.io", "alice.github.io"),
    ("docs.alice.github.io", "alice.github.io"),
    ("myblog.blogspot.com", "myblog.blogspot.com"),
    ("app.herokuapp.com", "app.herokuapp.com"),
    ("bucket.s3.amazonaws.com", "bucket.s3.amazonaws.com"),
    # internationalised domain names, unicode or punycode
    ("www.例え.jp", "例え.jp"),
    ("www.xn--r8jz45g.jp", "xn--r8jz45g.jp"),
    ("shop.пример.рф", "пример.рф"),
    # nothing above to group by: returned whole
    ("127.0.0.1", "127.0.0.1"),
    ("[2001:db8::1]", "[2001:db8::1]"),
    ("localhost", "localhost"),
    ("co.uk", "co.uk"),
    ("github.io", "github.io"),
]


@pytest.mark.parametrize(("host", "domain"), DOMAINS, ids=[d[0] for d in DOMAINS])
def test_registered_domain(host, domain):
    assert registered_domain(host) == domain


def test_a_page_declares_its_canonical_url_as_a_canonical_key():
    from focuscrawl.parse.html import parse_links

    page = (b'<html><head><base href="http://Ex.example:80/a/"><link rel="alternate canonical" '
            b'href="../B?utm_source=x&z=1&y=2#f"></head><body><a href="c">c</a></body></html>')
    assert parse_links(page, "http://ex.example/m/b").canonical == "http://ex.example/B?y=2&z=1"
    assert parse_links(b"<html><body><a href='/c'>c</a></body></html>", "http://ex.example/").canonical is None
    assert parse_links(b'<link rel="canonical" href="http://[bad">', "http://ex.example/").canonical is None


def test_the_parameter_matcher_is_built_once_per_pattern_set():
    """A URL's key does not recompile the tracking-parameter patterns: one matcher per set of patterns, reused."""
    from focuscrawl.parse import canon

    canon.canonical_url("http://ex.example/a?utm_source=x&b=1")  # the default set's matcher exists from here on
    before = canon._matcher.cache_info()
    for i in range(50):
        assert canon.canonical_url(f"http://ex.example/{i}?utm_source=x&b=1&FBCLID=2") == f"http://ex.example/{i}?b=1"
    after = canon._matcher.cache_info()
    assert after.misses == before.misses and after.hits == before.hits + 50
    canon.canonical_url("http://ex.example/a?ref_src=t", extra_strip=("ref_*",))
    canon.canonical_url("http://ex.example/b?ref_src=t", extra_strip=("ref_*",))
    assert canon._matcher.cache_info().misses == after.misses + 1  # a site's own set: one more matcher, once


def test_a_virtual_host_segment_is_canonicalised_as_a_host():
    from focuscrawl.parse.canon import virtual_host_key

    key = virtual_host_key("/site/")
    world = "http://127.0.0.1:8080/site/"
    spellings = [world + "People.Wiki.Test/wiki/A", world + "people.wiki.test:80/wiki/A?utm_source=x",
                 world + "people.wiki.test./wiki/A#top", world + "PEOPLE.wiki.test:80/wiki/A"]
    assert {key(u) for u in spellings} == {world + "people.wiki.test/wiki/A"}
    assert key(world + "people.wiki.test:8081/wiki/A") == world + "people.wiki.test:8081/wiki/A"
    assert key("https://o.example/site/x.test:443/a") == "https://o.example/site/x.test/a"
    assert key("http://o.example/other/X.test:80/a") == "http://o.example/other/X.test:80/a"  # not under the prefix
    with pytest.raises(ValueError):
        key(world + "people.wiki.test:99999/wiki/A")
