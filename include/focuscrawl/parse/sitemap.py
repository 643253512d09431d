"""Sitemaps (sitemaps.org protocol): XML ``urlset`` and ``sitemapindex``, gzip, plain-text sitemaps,
and RSS/Atom feeds used as sitemaps, as crawler-commons' SiteMapParser accepts them.

Seed ``001_c276720796c36144.txt`` (timely crawling of ephemeral content) discovers new pages
through such content sources. Namespaces are not enforced (a ``urlset`` in an old or prefixed
namespace is still read); every entry whose ``loc`` is missing or not an absolute http(s) URL,
and every body that is not a sitemap at all, is a :class:`Rejection` (issue 8, point 3).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

from lxml import etree

from focuscrawl.parse._xml import InputError, gunzip_if_needed, local, safe_parser, strip_bom
from focuscrawl.parse.rejection import Rejection

PARSER = "sitemap"
MAX_URLS = 50_000  # sitemaps.org: at most 50,000 URLs per sitemap


@dataclass(frozen=True)
class SitemapEntry:
    loc: str
    lastmod: str | None = None
    changefreq: str | None = None
    priority: float | None = None


@dataclass
class ParsedSitemap:
    kind: str = ""  # urlset, sitemapindex, text, rss, atom ("" when rejected)
    urls: list[SitemapEntry] = field(default_factory=list)  # pages (urlset, text, rss, atom)
    sitemaps: list[str] = field(default_factory=list)  # child sitemaps (sitemapindex)
    rejections: list[Rejection] = field(default_factory=list)


def valid_url(value: str | None) -> str | None:
    """``value`` stripped if it is an absolute http(s) URL with a host, else None."""
    value = (value or "").strip()
    try:
        parts = urllib.parse.urlsplit(value)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 1) > 0
    except ValueError:
        return None
    return value if ok and not any(c.isspace() for c in value) else None


def _text(element, name: str) -> str | None:
    for child in element:
        if local(child.tag) == name:
            return (child.text or "").strip() or None
    return None


def parse_sitemap(body: bytes | str, url: str) -> ParsedSitemap:
    """Parse a sitemap body fetched from ``url``; never raises."""
    out = ParsedSitemap()
    raw = body.encode("utf-8") if isinstance(body, str) else body

    def reject(reason: str, payload: bytes | str) -> None:
        out.rejections.append(Rejection(reason, payload, url, PARSER))

    try:
        data = strip_bom(gunzip_if_needed(raw))
    except InputError as exc:
        reject(str(exc), raw)
        return out
    if data.lstrip()[:1] == b"<":
        _parse_xml(data, raw, out, reject)
    else:
        _parse_text(data, raw, out, reject)
    if len(out.urls) > MAX_URLS:
        reject(f"{len(out.urls)} URLs exceed the sitemaps.org limit of {MAX_URLS}; the rest is kept here",
               "\n".join(e.loc for e in out.urls[MAX_URLS:]))
        del out.urls[MAX_URLS:]
    return out


def _parse_text(data: bytes, raw: bytes, out: ParsedSitemap, reject) -> None:
    lines = [line.strip() for line in data.decode("utf-8", errors="replace").splitlines() if line.strip()]
    good = [valid_url(line) for line in lines]
    if lines and not any(good):
        reject("not a sitemap: neither XML nor lines of http(s) URLs", raw)
        return
    out.kind = "text"
    for line, loc in zip(lines, good):
        if loc:
            out.urls.append(SitemapEntry(loc))
        else:
            reject("text sitemap line is not an absolute http(s) URL", line)


def _parse_xml(data: bytes, raw: bytes, out: ParsedSitemap, reject) -> None:
    parser = safe_parser()
    try:
        root = etree.fromstring(data, parser)
    except (etree.XMLSyntaxError, ValueError) as exc:
        root, error = None, str(exc)
    else:
        error = "; ".join(f"line {e.line}: {e.message}" for e in list(parser.error_log)[:3])
    if root is None:
        reject(f"not well-formed XML: {error or 'no root element'}", raw)
        return
    kind = local(root.tag)
    if kind == "urlset":
        for node in root:
            if local(node.tag) != "url":
                continue
            loc = valid_url(_text(node, "loc"))
            if loc is None:
                reject(f"<url> without a valid <loc> (got {_text(node, 'loc')!r})", etree.tostring(node))
                continue
            priority = _text(node, "priority")
            try:
                prio = float(priority) if priority is not None else None
            except ValueError:
                prio = None
            out.urls.append(SitemapEntry(loc, _text(node, "lastmod"), _text(node, "changefreq"), prio))
    elif kind == "sitemapindex":
        for node in root:
            if local(node.tag) != "sitemap":
                continue
            # Some indexes put the URL straight into <sitemap> instead of <loc>: read both.
            loc = valid_url(_text(node, "loc") or node.text)
            if loc is None:
                reject("<sitemap> without a valid <loc>", etree.tostring(node))
            else:
                out.sitemaps.append(loc)
    elif kind == "rss":
        for item in root.iter("{*}item"):
            loc = valid_url(_text(item, "link"))
            if loc is None:
                reject("RSS <item> without an http(s) <link>", etree.tostring(item))
            else:
                out.urls.append(SitemapEntry(loc, _text(item, "pubDate")))
    elif kind == "feed":
        for entry in root.iter("{*}entry"):
            hrefs = [l.get("href") for l in entry if local(l.tag) == "link" and l.get("rel", "alternate") == "alternate"]
            loc = valid_url(hrefs[0] if hrefs else None)
            if loc is None:
                reject("Atom <entry> without an http(s) alternate <link>", etree.tostring(entry))
            else:
                out.urls.append(SitemapEntry(loc, _text(entry, "updated")))
    else:
        reject(f"root element <{kind}> is not urlset, sitemapindex, rss or feed", raw)
        return
    out.kind = {"feed": "atom"}.get(kind, kind)
    if error:
        reject(f"XML is not well-formed ({error}); {len(out.urls) + len(out.sitemaps)} entries recovered", raw)
