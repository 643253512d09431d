"""Fuzz targets: every parser a crawler feeds with bytes from the web, and the URL guard.

Each target takes one input (bytes) and must return without raising: the parsers turn malformed
input into rejections (issue 8, point 3), the guard turns an unfetchable URL into a FetchError.
Anything else is a crash, which ``fuzz/run.py`` saves under ``tests/fuzz/regressions/<target>/``
for ``tests/fuzz/test_fuzz.py`` to replay for ever after.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Callable

URL = "http://fuzz.example/robots.txt"

# Rejections log a warning each; a fuzzer makes millions.
logging.disable(logging.CRITICAL)


def robots(data: bytes) -> None:
    from focuscrawl.parse.robots import parse_robots

    parsed = parse_robots(data, URL)
    head = data[:64].decode("latin-1")
    for agent in ("focuscrawl", head.split("\n", 1)[0] or "x"):
        rules = parsed.robots.for_agent(agent)
        assert isinstance(rules.allowed("/" + head), bool)


def listing(data: bytes) -> None:
    from focuscrawl.parse.listing import parse_listing

    parse_listing(data, "http://fuzz.example/r/all/new.json")


def feed(data: bytes) -> None:
    from focuscrawl.parse.feed import parse_feed

    parse_feed(data, "http://fuzz.example/feed.xml")


def sitemap(data: bytes) -> None:
    from focuscrawl.parse.sitemap import parse_sitemap

    parse_sitemap(data, "http://fuzz.example/sitemap.xml")


def html(data: bytes) -> None:
    from focuscrawl.parse.html import parse_links

    parse_links(data, "http://fuzz.example/a/page.html")


def url_guard(data: bytes) -> None:
    """A URL (first line) and a resolved address (the rest) through the guard and the URL check."""
    from focuscrawl.fetch import AddressGuard, FetchError
    from focuscrawl.fetch.guard import address_category
    from focuscrawl.parse.sitemap import url_problem

    text = data.decode("utf-8", errors="surrogateescape")
    url, _, rest = text.partition("\n")
    raw = rest.encode("utf-8", errors="surrogateescape")
    ip = ipaddress.IPv6Address(raw[:16].ljust(16, b"\0")) if len(raw) >= 8 else ipaddress.IPv4Address(raw[:4].ljust(4, b"\0"))
    address_category(ip)
    url_problem(url)

    def resolver(host, port, type=None):
        return [(None, None, None, "", (str(ip), port))]

    try:
        AddressGuard(resolver=resolver).check_url(url)
    except FetchError:
        pass


TARGETS: dict[str, Callable[[bytes], None]] = {
    "robots": robots, "listing": listing, "feed": feed, "sitemap": sitemap, "html": html, "url_guard": url_guard,
}

# Seed corpora: real files nobody on this project wrote (../shared/data/crawler-commons), where there are some.
SEED_DIRS = {
    "robots": ["crawler-commons/src/test/resources/robots"],
    "sitemap": ["crawler-commons/src/test/resources/sitemaps"],
    "feed": ["crawler-commons/src/test/resources/rss"],
}
