"""Internal versus external outlinks, by registered domain (seed 002, Section 5.1: targets are
computed separately for internal and external outlinks).

The registered domain of a host is the parse layer's: the public suffix list's, private suffixes
included (``focuscrawl.parse.canon.registered_domain``).
"""

from __future__ import annotations

from typing import Callable
from urllib.parse import urlsplit

from focuscrawl.parse.html import registered_domain as host_domain


def registered_domain(url: str) -> str:
    """``https://news.bbc.co.uk/x`` -> ``bbc.co.uk``; an IP or single-label host is returned whole.

    The port is kept for those hosts, since distinct local services share one address.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    if not host:
        return ""
    if host.replace(".", "").isdigit() or "." not in host:
        return f"{host}:{parts.port}" if parts.port else host
    return host_domain(host)


def virtual_host_domain(prefix: str = "/site/") -> Callable[[str], str]:
    """A ``domain_of`` for sites served side by side under ``<prefix><host>/`` of one origin (the local
    world serves every site as ``/site/<host>/...``): such a URL belongs to ``<host>``, taken whole
    because each virtual host is its own site; any other URL to its registered domain."""

    def domain_of(url: str) -> str:
        path = urlsplit(url).path
        if path.startswith(prefix):
            host = path[len(prefix):].split("/", 1)[0].lower()
            if host:
                return host
        return registered_domain(url)

    return domain_of


def split_outlinks(page_url: str, links: list[str],
                   domain_of: Callable[[str], str] = registered_domain) -> tuple[list[str], list[str]]:
    """``(internal, external)``: links on the page's own domain (``domain_of``, by default the registered
    domain), and the others (deduplicated, in order)."""
    own = domain_of(page_url)
    internal: list[str] = []
    external: list[str] = []
    seen: set[str] = set()
    for link in links:
        if link in seen:
            continue
        seen.add(link)
        (internal if domain_of(link) == own else external).append(link)
    return internal, external


def url_depth(url: str) -> int:
    """Number of non-empty path segments (a static page feature, seed 002 Table 1)."""
    return len([s for s in urlsplit(url).path.split("/") if s])
