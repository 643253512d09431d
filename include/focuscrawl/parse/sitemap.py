"""Sitemaps (sitemaps.org protocol): XML ``urlset`` and ``sitemapindex``, gzip, plain-text sitemaps,
and RSS/Atom feeds used as sitemaps, as crawler-commons' SiteMapParser accepts them.

Seed 001, *Timely crawling of high-quality ephemeral new content* (timely crawling of ephemeral content) discovers new pages
through such content sources. Namespaces are not enforced (a ``urlset`` in an old or prefixed
namespace is still read); every entry whose ``loc`` is missing or not an absolute http(s) URL,
and every body that is not a sitemap at all, is a :class:`Rejection`.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from dataclasses import dataclass, field

from lxml import etree

from focuscrawl.parse._xml import InputError, gunzip_if_needed, local, safe_parser, strip_bom
from focuscrawl.parse.rejection import Rejection, decode_recovering

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


# RFC 1123 2.1 host names: letters, digits and hyphens in labels of 1-63 octets, no hyphen at an
# edge, 253 octets in all. Underscores are tolerated, as browsers and DNS do (``my_blog.example``).
_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)\Z")


def _host_problem(host: str) -> str | None:
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1].split("%", 1)[0])
        except ValueError:
            return f"host {host!r} is not an IPv6 literal"
        return None
    try:
        ascii_host = host.encode("idna").decode("ascii")  # internationalised names, as a resolver sees them
    except UnicodeError:
        return f"host {host!r} holds characters no host name may hold"
    name = ascii_host[:-1] if ascii_host.endswith(".") else ascii_host
    if not name or len(name) > 253:
        return f"host {host!r} is empty or longer than 253 octets"
    bad = next((label for label in name.split(".") if not _LABEL.match(label)), None)
    if bad is not None:
        return f"host {host!r} holds characters no host name may hold (label {bad!r})"
    return None


def url_problem(value: str | None) -> str | None:
    """Why ``value`` is not a URL to crawl (absolute http(s), a real host name or IP, a usable
    port, no user info, no backslash), or None when it is one."""
    value = (value or "").strip()
    if not value:
        return "empty URL"
    if any(c.isspace() or ord(c) < 0x20 or c == "\x7f" for c in value):
        return "URL holds white space or control characters"
    if "\\" in value:
        # Browsers read "\" as "/" in http(s) URLs while urlsplit does not, so "http://evil\@good/"
        # names two different hosts to two readers.
        return "URL holds a backslash (read as '/' by browsers, not by parsers: a host-confusion trick)"
    try:
        parts = urllib.parse.urlsplit(value)
        port = parts.port
    except ValueError as exc:
        return f"URL cannot be parsed ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        return f"scheme {parts.scheme or '(none)'!r} is not http or https"
    authority = parts.netloc
    if "@" in authority:
        return "URL carries user info (user@host): the host one reader sees is not the one another sees"
    host = authority.rsplit(":", 1)[0] if not authority.endswith("]") else authority
    if not host:
        return "URL has no host"
    if port == 0:
        return "port 0 is not a port a server listens on"
    return _host_problem(host)


def valid_url(value: str | None) -> str | None:
    """``value`` stripped if it is a URL to crawl (see :func:`url_problem`), else None."""
    return (value or "").strip() if url_problem(value) is None else None


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
    text, decoding = decode_recovering(data)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    problems = [url_problem(line) for line in lines]
    if lines and all(problems):
        reject("not a sitemap: neither XML nor lines of http(s) URLs", raw)
        return
    out.kind = "text"
    if decoding:
        reject(f"text sitemap {decoding}", raw)
    for line, problem in zip(lines, problems):
        if problem is None:
            out.urls.append(SitemapEntry(line))
        else:
            reject(f"text sitemap line is not a URL to crawl: {problem}", line)


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
                reject(f"<url> without a valid <loc> (got {_text(node, 'loc')!r}: {url_problem(_text(node, 'loc'))})",
                       etree.tostring(node))
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
