"""Links of an HTML page: absolute URL, anchor text, ``nofollow``, and internal vs external.

Seed ``002_f70440d1db7174f2.txt`` (look back, look around) counts a page's new outlinks on each
revisit; this is where outlinks come from. lxml's HTML parser recovers from broken markup the
way browsers do; ``<base href>`` sets the base URL, ``rel=nofollow`` on a link or
``<meta name=robots content=nofollow>`` on the page marks links not to follow, and a link is
internal when its registered domain equals the page's. Without a public-suffix list the
registered domain is approximated (last two labels, three under ``co.uk``-style suffixes).
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from dataclasses import dataclass, field

from lxml import etree, html

from focuscrawl.parse.rejection import Rejection

PARSER = "html"
# Second-level labels under which registrations happen one level deeper (bbc.co.uk, abc.net.au).
_SECOND_LEVEL = frozenset({"co", "com", "net", "org", "gov", "ac", "edu", "ne", "or", "go"})
# Links to these schemes are not pages; they are counted in ``skipped``, not rejected.
_NOT_PAGES = frozenset({"javascript", "mailto", "tel", "data", "ftp", "about", "sms", "file"})


@dataclass(frozen=True)
class Link:
    url: str
    text: str
    nofollow: bool
    internal: bool


@dataclass
class ParsedPage:
    base: str = ""
    links: list[Link] = field(default_factory=list)
    skipped: int = 0  # mailto:, javascript:, fragments of this page...
    rejections: list[Rejection] = field(default_factory=list)


def registered_domain(host: str) -> str:
    host = host.lower().rstrip(".")
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    labels = host.split(".")
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def _absolute(base: str, href: str) -> str | None:
    """``href`` resolved against ``base``, without its fragment; None if it is not a valid http(s) URL."""
    try:
        joined, _ = urllib.parse.urldefrag(urllib.parse.urljoin(base, href.strip()))
        parts = urllib.parse.urlsplit(joined)
        _ = parts.port  # raises on a bad port
    except ValueError:
        return None
    return joined if parts.scheme in ("http", "https") and parts.hostname else None


def parse_links(body: bytes | str, url: str) -> ParsedPage:
    """Parse the links of an HTML page fetched from ``url``; never raises."""
    out = ParsedPage(base=url)

    def reject(reason: str, payload: bytes | str) -> None:
        out.rejections.append(Rejection(reason, payload, url, PARSER))

    raw = body.encode("utf-8") if isinstance(body, str) else body
    if not raw.strip():
        reject("empty HTML body", raw)
        return out
    try:
        doc = html.document_fromstring(raw, parser=html.HTMLParser(recover=True, no_network=True, remove_comments=True))
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        reject(f"not parseable as HTML: {exc}", raw)
        return out

    bases = [b for b in doc.xpath("//base/@href") if b.strip()]
    if bases:
        out.base = _absolute(url, bases[0]) or url
    page_nofollow = any(
        "nofollow" in (m.get("content") or "").lower() or "none" in (m.get("content") or "").lower()
        for m in doc.xpath("//meta[translate(@name,'ROBTS','robts')='robots']")
    )
    page_domain = registered_domain(urllib.parse.urlsplit(url).hostname or "")
    page_url = urllib.parse.urldefrag(url)[0]
    for a in doc.xpath("//a[@href] | //area[@href]"):
        href = a.get("href") or ""
        scheme = href.strip().split(":", 1)[0].lower() if ":" in href else ""
        if not href.strip() or href.strip().startswith("#") or scheme in _NOT_PAGES:
            out.skipped += 1
            continue
        target = _absolute(out.base, href)
        if target is None:
            reject(f"link href {href!r} is not a valid http(s) URL", etree.tostring(a, encoding="unicode", with_tail=False))
            continue
        if target == page_url:
            out.skipped += 1
            continue
        rel = (a.get("rel") or "").lower().split()
        host = urllib.parse.urlsplit(target).hostname or ""
        out.links.append(Link(
            url=target,
            text=" ".join(a.text_content().split()),
            nofollow=page_nofollow or "nofollow" in rel,
            internal=registered_domain(host) == page_domain,
        ))
    return out
