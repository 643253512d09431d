"""Content sources over HTTP: find a site's hubs, category pages, feeds and sitemaps, and read them.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), introduction and section 3: "examples of content sources are
main pages of blogs, news sites, category pages of such news sites, RSS feeds, sitemaps"; a
crawler recrawls them to find new pages. :func:`read_source` turns one fetched source into the
links it lists, each with its publication time when the source gives one (RSS ``pubDate``, Atom
``updated``, sitemap ``lastmod``, an HTML ``<time>`` beside the link). Feeds are parsed with
feedparser (:mod:`focuscrawl.parse.feed`), sitemaps with :mod:`focuscrawl.parse.sitemap`, hubs
with lxml; none of them raises, what they refuse comes back as rejections (dead letters).
:func:`discover_sources` starts from a site's front page and its robots.txt. Every URL a source lists
(a sitemap's ``<loc>``, a feed's link, a hub's link, a feed a hub names) is its canonical key
(:func:`focuscrawl.parse.canon.canonical_url`, or the crawler's ``key_of``), so one page listed under
several spellings, or by two sources, is one page. Discovery's fetch of each source it keeps is that
source's first read (:class:`SourceRead`: the links it listed and the response's validators), handed to the
crawler so its first recrawl is conditional, not a second full read (see docs/hygiene.md).
"""

from __future__ import annotations

import email.utils
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from lxml import etree, html

from focuscrawl.fetch.conditional import Validators
from focuscrawl.parse.canon import canonical_url
from focuscrawl.parse.feed import parse_feed
from focuscrawl.parse.html import parse_links
from focuscrawl.parse.rejection import Rejection
from focuscrawl.parse.robots import parse_robots
from focuscrawl.parse.sitemap import parse_sitemap, valid_url

FEED_TYPES = ("application/rss+xml", "application/atom+xml", "application/rdf+xml")
ACCEPT = ("text/html", "application/xhtml+xml", "text/xml", "application/xml", "text/plain", *FEED_TYPES,
          "application/x-gzip", "application/gzip")


@dataclass(frozen=True)
class SourceEntry:
    url: str
    published: float | None = None  # epoch seconds, when the source says


@dataclass
class SourceListing:
    kind: str  # feed, sitemap, hub ("" when nothing could be read)
    entries: list[SourceEntry] = field(default_factory=list)
    navigation: list[str] = field(default_factory=list)  # hub links without a date: other sources, not content
    rejections: list[Rejection] = field(default_factory=list)


@dataclass(frozen=True)
class SourceRead:
    """What discovery read of a source: the links it listed and the response's validators
    (:class:`~focuscrawl.fetch.conditional.Validators`; a digest only when the fetch gave no headers)."""

    entries: tuple[SourceEntry, ...]
    validators: Validators


@dataclass(frozen=True)
class ContentSource:
    url: str
    kind: str
    # Discovery's read of it, the crawler's first read (SourceCrawler.first_reads); not part of its identity.
    read: SourceRead | None = field(default=None, compare=False, repr=False)

    @property
    def host(self) -> str:
        return urllib.parse.urlsplit(self.url).netloc.lower()


def timestamp(text: str | None) -> float | None:
    """Epoch seconds of an RFC 822 (RSS) or ISO 8601 (Atom, sitemaps, HTML) date; None if unreadable."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def _looks_like_feed(body: bytes, media: str) -> bool:
    head = body[:512].lstrip().lower()
    return media in FEED_TYPES or b"<rss" in head or b"<feed" in head or b"<rdf:rdf" in head


def read_source(body: bytes, url: str, media: str, key_of: Callable[[str], str] = canonical_url) -> SourceListing:
    """The links a fetched content source lists (``media``: the response's media type), each URL its
    key (``key_of``; a URL it cannot parse is left out); never raises."""
    if media in ("text/html", "application/xhtml+xml"):
        listing = _read_hub(body, url)
    elif _looks_like_feed(body, media):
        feed = parse_feed(body, url, media or "application/xml")
        entries = [SourceEntry(e.url, timestamp(e.published)) for e in feed.entries]
        listing = SourceListing("feed" if feed.version else "", entries, rejections=feed.rejections)
    else:
        listing = _read_sitemap(body, url)
    return _keyed(listing, key_of)


def _keyed(listing: SourceListing, key_of: Callable[[str], str]) -> SourceListing:
    """``listing`` with every URL its key, each once (the first listing of a page keeps its date)."""
    def key(url: str) -> str | None:
        try:
            return key_of(url)
        except (ValueError, UnicodeError):
            return None

    entries: dict[str, SourceEntry] = {}
    for e in listing.entries:
        k = key(e.url)
        if k is not None and k not in entries:
            entries[k] = SourceEntry(k, e.published)
    navigation = list(dict.fromkeys(k for k in map(key, listing.navigation) if k is not None))
    return SourceListing(listing.kind, list(entries.values()), navigation, listing.rejections)


def _read_sitemap(body: bytes, url: str) -> SourceListing:
    parsed = parse_sitemap(body, url)
    out = SourceListing("sitemap" if parsed.kind else "", [SourceEntry(e.loc, timestamp(e.lastmod)) for e in parsed.urls])
    out.navigation = list(parsed.sitemaps)
    for rejection in parsed.rejections:
        # Relative <loc>s break the protocol but are common (and what the world serves): resolved
        # against the sitemap's URL they are kept; anything else stays a rejection.
        recovered = _relative_loc(rejection, url)
        if recovered is None:
            out.rejections.append(rejection)
        else:
            out.entries.append(recovered)
    return out


def _relative_loc(rejection: Rejection, base: str) -> SourceEntry | None:
    payload = rejection.payload_bytes
    if not payload.lstrip().startswith(b"<url"):
        return None
    try:
        node = etree.fromstring(payload, etree.XMLParser(resolve_entities=False, no_network=True, recover=True))
    except etree.XMLSyntaxError:
        return None
    if node is None:
        return None
    fields = {etree.QName(c).localname: (c.text or "").strip() for c in node if isinstance(c.tag, str)}
    loc = fields.get("loc", "")
    if not loc or "://" in loc:
        return None
    absolute = valid_url(urllib.parse.urljoin(base, loc))
    return None if absolute is None else SourceEntry(absolute, timestamp(fields.get("lastmod")))


def _read_hub(body: bytes, url: str) -> SourceListing:
    """Dated links are the hub's content; undated links are navigation (other sources, feeds)."""
    parsed = parse_links(body, url)
    out = SourceListing("hub" if parsed.links else "", rejections=list(parsed.rejections))
    dated: dict[str, float | None] = {}
    try:
        doc = html.document_fromstring(body, parser=html.HTMLParser(recover=True, no_network=True))
        for t in doc.iter("time"):
            anchors = t.getparent().xpath(".//a[@href]") if t.getparent() is not None else []
            if anchors:
                try:  # the key parse_links gives the same link
                    target = canonical_url(urllib.parse.urljoin(parsed.base, anchors[0].get("href")))
                except (ValueError, UnicodeError):
                    continue
                dated[target] = timestamp(t.get("datetime") or t.text_content())
        alternates = [urllib.parse.urljoin(parsed.base, link.get("href")) for link in
                      doc.xpath("//link[@rel='alternate'][@href]") if (link.get("type") or "").lower() in FEED_TYPES]
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        alternates = []  # parse_links already rejected the body
    for link in parsed.links:
        if link.url in dated:
            out.entries.append(SourceEntry(link.url, dated[link.url]))
        elif not link.nofollow and link.url not in out.navigation:
            out.navigation.append(link.url)
    out.navigation.extend(a for a in alternates if a not in out.navigation)
    if not dated:  # a hub that dates nothing: every followable link may be new content
        out.entries = [SourceEntry(u) for u in out.navigation]
    return out


def _feedish(url: str) -> bool:
    path = urllib.parse.urlsplit(url).path.lower()
    return path.endswith((".rss", ".atom", ".rdf", ".xml", ".xml.gz")) or any(w in path for w in ("feed", "rss", "sitemap"))


def discover_sources(fetch: Callable[[str], tuple[bytes, str, str]], site_url: str,
                     max_candidates: int = 200,
                     key_of: Callable[[str], str] = canonical_url) -> tuple[list[ContentSource], list[Rejection]]:
    """Content sources of one site: its front page, the pages, feeds and sitemaps it links to
    under the same path, and the sitemaps its robots.txt names, each kept if it lists dated links;
    at most ``max_candidates`` URLs are examined.

    ``fetch(url) -> (body, media_type, final_url[, warc_ref[, headers]])`` raises on failure (the fetch layer
    does). Each source found carries its :class:`SourceRead`, the validators taken from ``headers``.
    """
    site = key_of(site_url if site_url.endswith("/") else site_url + "/")
    rejections: list[Rejection] = []
    candidates: list[str] = [site]
    try:
        body, _, robots_url, *_ = fetch(urllib.parse.urljoin(site, "robots.txt"))
        parsed = parse_robots(body, robots_url)
        rejections.extend(parsed.rejections)
        candidates.extend(_keyed(SourceListing("", navigation=list(parsed.robots.sitemaps)), key_of).navigation)
    except Exception:  # noqa: BLE001 - no robots.txt is no sitemap hint, not a failure
        pass
    found: list[ContentSource] = []
    seen: set[str] = set()
    while candidates and len(seen) < max_candidates:
        url = candidates.pop(0)
        if url in seen or not url.startswith(site):
            continue
        seen.add(url)
        try:
            body, media, final, *rest = fetch(url)
        except Exception:  # noqa: BLE001 - a candidate that cannot be fetched is not a source
            continue
        listing = read_source(body, final, media, key_of)
        rejections.extend(listing.rejections)
        if any(e.published is not None for e in listing.entries):
            warc, headers = (rest[0] if rest else None), (rest[1] if len(rest) > 1 else {})
            validators = Validators.of(headers, body, warc.record_id if warc is not None else None)
            found.append(ContentSource(url, listing.kind, SourceRead(tuple(listing.entries), validators)))
        if url == site:  # only the front page's navigation is followed: sources one click from it
            # feeds and sitemaps first: the cheapest sources to read, and the ones a cap must not cut
            candidates.extend(sorted((u for u in listing.navigation if u.startswith(site)), key=lambda u: not _feedish(u)))
    return found, rejections
