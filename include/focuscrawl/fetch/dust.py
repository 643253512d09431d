"""URL rewrite rules learned from a site's own aliases, so a page's next spelling is not fetched at all.

Bar-Yossef, Keidar and Schonfeld, "Do Not Crawl in the DUST: Different URLs with Similar Text", WWW 2007,
sections 3-4: on one site, URLs that differ by the same substring substitution ``alpha -> beta`` (a
trailing slash, a ``/m/`` mobile copy, an ``index.html``) tend to name one page, so rules learned from a
few confirmed pairs canonicalise URLs never fetched. DustBuster mines candidate rules from URL lists and
validates them by fetching samples; here the pairs come validated for free: every alias the crawler
records (a redirect's end, or a page's own ``rel=canonical`` on its site) is one ``(url, key)`` pair.

A pair's rule is the substitution that turns one into the other, cut at path boundaries: the longest
common prefix and suffix are stripped back to a ``/`` (or the URL's end, written ``$``), so ``.../wiki/X/``
-> ``.../wiki/X`` gives ``"/$" -> "$"`` and ``/site/h/m/wiki/X`` -> ``/site/h/wiki/X`` gives ``"/m/" ->
"/"``. A rule is learned per site (``site_of``, by default the URL's host) and applied once ``support`` distinct pairs of that site
gave it and no counter-example did: a URL the rule would rewrite that was fetched and turned out to be
its own page (a counter-example retires the rule for the site for good). Only rules that shorten the
URL are kept, so applying them terminates.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections import defaultdict
from typing import Callable


def _cut(a: str, b: str) -> tuple[str, str] | None:
    """The substitution ``alpha -> beta`` (``$`` marks the URL's end) that turns ``a`` into ``b``, cut at ``/``."""
    a, b = a + "$", b + "$"
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[-1 - s] == b[-1 - s]:
        s += 1
    # widen to path boundaries: the prefix back to (and including) a "/", the suffix forward to a "/" or "$"
    p = a.rfind("/", 0, p + 1 if p < len(a) and a[p] == "/" else p)
    if p < 0:
        return None
    tail = len(a) - s
    while tail < len(a) and a[tail] not in "/$":
        tail += 1
    alpha, beta = a[p:tail + 1], b[p:len(b) - (len(a) - tail) + 1]
    if alpha == beta or len(beta) >= len(alpha) or "?" in alpha or "?" in beta:
        return None
    return alpha, beta


class DustRules:
    """``rules(url)`` -> ``url`` rewritten by the rules its site has learned (see the module docstring).

    ``learn(url, key)``: the crawler found that ``url`` is the page ``key`` (an alias);
    ``refute(url)``: ``url`` was fetched and is its own page (no alias), which retires every rule that
    would have rewritten it. Thread-safe. ``status()`` tells the rules in force and retired per site.
    """

    def __init__(self, site_of: Callable[[str], str] = lambda url: urllib.parse.urlsplit(url).netloc.lower(),
                 support: int = 2) -> None:
        self.site_of, self.support = site_of, support
        self._pairs: dict[str, dict[tuple[str, str], set[str]]] = defaultdict(dict)  # site -> rule -> its URLs
        self._active: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self._retired: dict[str, set[tuple[str, str]]] = defaultdict(set)
        self._lock = threading.Lock()

    def learn(self, url: str, key: str) -> None:
        site = self.site_of(key)
        if self.site_of(url) != site:
            return
        rule = _cut(url, key)
        if rule is None:
            return
        with self._lock:
            if rule in self._retired[site]:
                return
            support = self._pairs[site].setdefault(rule, set())
            support.add(url)
            if len(support) == self.support:
                self._active[site].append(rule)

    def refute(self, url: str) -> None:
        site, marked = self.site_of(url), url + "$"
        with self._lock:
            for rule in [r for r in self._pairs.get(site, {}) if r[0] in marked]:
                del self._pairs[site][rule]
                self._retired[site].add(rule)
                if rule in self._active[site]:
                    self._active[site].remove(rule)

    def __call__(self, url: str) -> str:
        with self._lock:
            rules = list(self._active.get(self.site_of(url), ()))
        if not rules:
            return url
        marked = url + "$"
        for alpha, beta in rules:
            if alpha in marked:
                marked = marked.replace(alpha, beta, 1)
        return marked[:-1] if marked.endswith("$") else marked

    def status(self) -> dict:
        with self._lock:
            return {"rules": {site: [f"{a} -> {b}" for a, b in rules] for site, rules in self._active.items() if rules},
                    "retired": sum(len(r) for r in self._retired.values())}


__all__ = ["DustRules"]
