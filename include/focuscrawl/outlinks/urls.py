"""Internal versus external outlinks, by registered domain (seed 002, Section 5.1: targets are
computed separately for internal and external outlinks).

No public-suffix list ships with the platform, so the registered domain is the last two labels of
the host, or three when the second-level label is one of the common public second levels
(``co.uk``, ``com.au``...). That is exact for the world's hosts and for the large majority of real ones.
"""

from __future__ import annotations

from urllib.parse import urlsplit

_SECOND_LEVELS = frozenset({"co", "com", "net", "org", "gov", "edu", "ac", "or", "ne", "go"})


def registered_domain(url: str) -> str:
    """``https://news.bbc.co.uk/x`` -> ``bbc.co.uk``; an IP or single-label host is returned whole.

    The port is kept for loopback hosts, because the local world serves distinct sites on one address.
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    if not host:
        return ""
    labels = host.split(".")
    if host.replace(".", "").isdigit() or len(labels) < 2:
        return f"{host}:{parts.port}" if parts.port else host
    take = 3 if len(labels) >= 3 and labels[-2] in _SECOND_LEVELS and len(labels[-1]) == 2 else 2
    return ".".join(labels[-take:])


def split_outlinks(page_url: str, links: list[str]) -> tuple[list[str], list[str]]:
    """``(internal, external)``: links on the page's own registered domain, and the others (deduplicated, in order)."""
    own = registered_domain(page_url)
    internal: list[str] = []
    external: list[str] = []
    seen: set[str] = set()
    for link in links:
        if link in seen:
            continue
        seen.add(link)
        (internal if registered_domain(link) == own else external).append(link)
    return internal, external


def url_depth(url: str) -> int:
    """Number of non-empty path segments (a static page feature, seed 002 Table 1)."""
    return len([s for s in urlsplit(url).path.split("/") if s])
