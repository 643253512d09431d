"""One canonical key per URL, and the registered domain of a host.

Without a canonical key one page is fetched, ranked and landed once per spelling of its URL
(host case, ``:80``, ``#top``, ``?utm_source=``, a session id, parameter order). The normal form
itself is w3lib's ``canonicalize_url`` (Scrapy's: sorted query, dot segments resolved,
percent-encoding normalised, IDN hosts to punycode, fragment dropped); this module only adds what
it leaves alone: default ports, a trailing dot on the host, and tracking/session parameters.
The WARC writer keeps the URL actually fetched; this key is for frontiers, dedup and tables.
It lives in ``parse``, below ``fetch`` (which may import it): the parsers key their links with it and
must not reach the lake (``tests/test_import_boundaries.py``).

Registered domains come from the public suffix list shipped by ``publicsuffixlist``, private
section included: ``alice.github.io`` and ``bob.github.io`` are different owners (browsers scope
cookies the same way), so they are different sites for internal/external links and politeness.
"""

from __future__ import annotations

import fnmatch
import functools
import ipaddress
import re
import urllib.parse
from typing import Callable, Iterable

from publicsuffixlist import PublicSuffixList
from w3lib.url import canonicalize_url

# Query and ``;path`` parameters that name a visitor or a campaign, not a page. Shell-style
# patterns, matched case-insensitively on the decoded parameter name.
TRACKING_PARAMS: tuple[str, ...] = (
    "utm_*", "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "igshid",
    "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi", "mkt_tok", "oly_anon_id", "oly_enc_id",
    "sessionid", "session_id", "phpsessid", "jsessionid", "aspsessionid*", "cfid", "cftoken",
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


@functools.lru_cache(maxsize=256)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """One compiled test for a set of shell patterns (built once per set, not per URL): the patterns
    translated by ``fnmatch`` and joined into one case-insensitive regular expression."""
    if not patterns:
        return lambda name: False
    match = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns), re.IGNORECASE).match
    return lambda name: match(name) is not None


def canonical_url(url: str, *, strip: Iterable[str] = TRACKING_PARAMS, extra_strip: Iterable[str] = ()) -> str:
    """The canonical key of ``url``; raises ValueError if it cannot be parsed (bad host or port).

    ``strip`` is the list of parameters removed; ``extra_strip`` adds a site's own (the per-site
    override) without restating the defaults.
    """
    parts = urllib.parse.urlsplit(url.strip())
    scheme = parts.scheme.lower()
    drop = _matcher((*strip, *extra_strip))  # a tuple: the compiled matcher is cached by its patterns
    host = (parts.hostname or "").rstrip(".")
    port = parts.port  # raises ValueError on a bad port
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    if parts.username is not None:
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{netloc}"
    # ;jsessionid=... and friends in any path segment
    path = "/".join(
        ";".join([seg[0], *(p for p in seg[1:] if not drop(urllib.parse.unquote(p.split("=", 1)[0])))])
        for seg in (s.split(";") for s in parts.path.split("/"))
    )
    query = "&".join(
        pair for pair in parts.query.split("&")
        if pair and not drop(urllib.parse.unquote_plus(pair.split("=", 1)[0]))
    )
    return canonicalize_url(urllib.parse.urlunsplit((scheme, netloc, path, query, "")))


def virtual_host_key(prefix: str = "/site/", key_of: Callable[[str], str] = canonical_url) -> Callable[[str], str]:
    """A key function for sites served side by side as ``<prefix><host>/...`` of one origin (the local world
    serves every site so): the ``<host>`` segment is that site's authority, so it is canonicalised as
    :func:`canonical_url` canonicalises a host (lower case, the origin scheme's default port and a trailing
    dot dropped) before ``key_of`` makes the whole URL a key. Other URLs are ``key_of``'s alone."""

    def key(url: str) -> str:
        parts = urllib.parse.urlsplit(url.strip())
        if parts.path.startswith(prefix):
            host, sep, rest = parts.path[len(prefix):].partition("/")
            if host:
                authority = urllib.parse.urlsplit(f"{parts.scheme or 'http'}://{host}/")
                name = (authority.hostname or "").rstrip(".")
                port = authority.port  # raises ValueError on a bad port, as canonical_url does
                if port is not None and port != _DEFAULT_PORTS.get(parts.scheme.lower()):
                    name += f":{port}"
                url = urllib.parse.urlunsplit(parts._replace(path=f"{prefix}{name}{sep}{rest}"))
        return key_of(url)

    return key


@functools.cache
def _psl() -> PublicSuffixList:
    return PublicSuffixList()  # parses the shipped list once (~0.1 s)


def registered_domain(host: str) -> str:
    """``news.bbc.co.uk`` -> ``bbc.co.uk``, ``alice.github.io`` -> itself (private suffixes count).

    An IP address, a bare public suffix or a host under no known suffix (``localhost``) is returned
    whole: there is nothing above it to group by.
    """
    host = host.lower().rstrip(".")
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    return _psl().privatesuffix(host) or host
