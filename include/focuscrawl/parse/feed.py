"""RSS and Atom feeds (with ``feedparser``): the entries a content source announces.

Seed 001, *Timely crawling of high-quality ephemeral new content* (timely crawling of ephemeral content) polls content sources
for new links; a feed is one such source. The body is handed to feedparser as a stream, never
as a string or bytes (those feedparser would take for a URL or a file name to open), and its
SAX parser runs with external entities off. A feed that is not well-formed, and an entry
without an http(s) link, become :class:`Rejection` s.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import feedparser

from focuscrawl.parse.rejection import Rejection
from focuscrawl.parse.sitemap import valid_url

PARSER = "feed"


@dataclass(frozen=True)
class FeedEntry:
    url: str
    title: str | None = None
    published: str | None = None  # as written in the feed
    entry_id: str | None = None


@dataclass
class ParsedFeed:
    version: str = ""  # feedparser's name of the format, e.g. rss20, atom10 ("" when rejected)
    title: str | None = None
    entries: list[FeedEntry] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)


def parse_feed(body: bytes | str, url: str, content_type: str = "application/xml") -> ParsedFeed:
    """Parse an RSS/Atom body fetched from ``url`` (``content_type``: the response's header); never raises."""
    out = ParsedFeed()
    raw = body.encode("utf-8") if isinstance(body, str) else body

    def reject(reason: str, payload: bytes | str) -> None:
        out.rejections.append(Rejection(reason, payload, url, PARSER))

    try:
        doc = feedparser.parse(io.BytesIO(raw), response_headers={"content-location": url, "content-type": content_type})
    except Exception as exc:  # feedparser's own bugs must not take a crawler down; the input is kept
        reject(f"feedparser failed: {type(exc).__name__}: {exc}", raw)
        return out
    problem = doc.get("bozo_exception") if doc.get("bozo") else None
    if not doc.get("version") and not doc.entries:
        reject(f"not an RSS or Atom feed{f': {problem}' if problem else ''}", raw)
        return out
    out.version = doc.get("version") or "unknown"
    out.title = doc.feed.get("title")
    for entry in doc.entries:
        link = valid_url(entry.get("link")) or valid_url(entry.get("id"))
        if link is None:
            reject("feed entry has no http(s) link", json.dumps(dict(entry), default=str, ensure_ascii=False))
            continue
        fields = dict(entry)  # a plain dict: feedparser's updated->published alias warns on every read
        out.entries.append(FeedEntry(link, fields.get("title"), fields.get("published") or fields.get("updated"), fields.get("id")))
    if isinstance(problem, (feedparser.CharacterEncodingOverride, feedparser.CharacterEncodingUnknown)):
        # Recovered with another encoding than declared: the entries are kept, the input is flagged
        # so mojibake does not pass silently.
        reject(f"feed encoding recovered ({problem}); {len(out.entries)} entries kept, check their text", raw)
    elif problem is not None:
        reject(f"feed is not well-formed ({problem}); {len(out.entries)} entries recovered", raw)
    return out
