"""Links of an HTML page: absolute URL, anchor text, ``nofollow``, and internal vs external.

Seed 002 (look back, look around) counts a page's new outlinks on each
revisit; this is where outlinks come from. lxml's HTML parser recovers from broken markup the
way browsers do; ``<base href>`` sets the base URL, ``rel=nofollow`` on a link or
``<meta name=robots content=nofollow>`` on the page marks links not to follow, and a link is
internal when its registered domain equals the page's (public suffix list, private suffixes
included: ``focuscrawl.parse.canon``). Every link is its canonical key, so one page
under several spellings is one outlink. The page's own ``<link rel="canonical" href>`` (RFC 6596,
section 3: the preferred URL of duplicate content) is kept as ``canonical``, as a canonical key too.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

from lxml import etree, html

from focuscrawl.parse.canon import canonical_url, registered_domain
from focuscrawl.parse.rejection import Rejection

PARSER = "html"
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
    canonical: str | None = None  # the page's declared rel=canonical URL (its canonical key), if valid
    rejections: list[Rejection] = field(default_factory=list)
    unparsable: Rejection | None = None  # the body is no page at all (:func:`unparsable`); also in rejections


__all__ = ["Link", "ParsedPage", "parse_links", "registered_domain", "unparsable"]


def unparsable(raw: bytes) -> str | None:
    """Why a fetched body is not an HTML page at all (None: it is one, however broken its markup):
    empty, or carrying a NUL byte, which the HTML standard's tokenizer treats as a parse error and
    which a page's text never holds: a corrupted, cut-off or binary body. Such a body is dead-lettered
    with this reason by the crawlers, not stored as a page with no text and no links."""
    if not raw.strip():
        return "empty HTML body"
    if b"\x00" in raw:
        return "NUL byte in the HTML body: a corrupted or binary body, not a page"
    return None


def _absolute(base: str, href: str) -> str | None:
    """``href`` resolved against ``base``, as its canonical key; None if it is not a valid http(s) URL."""
    try:
        joined = urllib.parse.urljoin(base, href.strip())
        parts = urllib.parse.urlsplit(joined)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        return canonical_url(joined)
    except (ValueError, UnicodeError):  # bad port or host; IDNA refuses some hosts
        return None


def parse_links(body: bytes | str, url: str) -> ParsedPage:
    """Parse the links of an HTML page fetched from ``url``; never raises."""
    out = ParsedPage(base=url)

    def reject(reason: str, payload: bytes | str) -> None:
        out.rejections.append(Rejection(reason, payload, url, PARSER))

    raw = body.encode("utf-8") if isinstance(body, str) else body
    reason = unparsable(raw)
    if reason is not None:
        reject(reason, raw)
        out.unparsable = out.rejections[-1]
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
    declared = [h for link in doc.xpath("//link[@rel][@href]") if "canonical" in link.get("rel").lower().split()
                for h in [link.get("href")] if h.strip()]
    if declared:  # RFC 6596 section 3: relative references are resolved like any link
        out.canonical = _absolute(out.base, declared[0])
    page_domain = registered_domain(urllib.parse.urlsplit(url).hostname or "")
    page_url = _absolute(url, "") or urllib.parse.urldefrag(url)[0]
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
