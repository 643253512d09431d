"""Soft-404 detection: a page answered ``200 OK`` that is only the site's "not found" page.

Bar-Yossef, Broder, Kumar and Tomkins, "Sic Transit Gloria Telae: Towards an Understanding of the
Web's Decay", WWW 2004, section 3 ("soft 404s"): ask the site, in the same directory, for a URL that
cannot exist; a site that answers it ``200 OK`` serves soft-404s there, and a page whose content is
that answer's is one. Content is compared as the Jaccard similarity of the visible texts' word sets.

Probes are spent on suspicion only: a soft-404 page is the same text under many URLs, so a directory
(``scheme://host/dir/``) is probed, once, when a page's text was already seen under another URL;
every "not found" answer learned is then checked first, so a site's later soft-404s cost no probe.
A probe answered with an error (a true 404) clears its directory. The price: the first soft-404 of a
text is taken for content, before its twin shows it up. A crawler that fetches the page again (the
revisitor) says so (``check(..., again=True)``): a page kept before is its own twin, so its directory is
probed then, once, and the soft-404 taken for content is refused at its next revisit, not revisited for good.
"""

from __future__ import annotations

import hashlib
import threading
import urllib.parse
from typing import Callable

from focuscrawl.fetch.errors import FetchError


def _words(text: str) -> frozenset[str]:
    return frozenset(text.lower().split())


class Soft404Probe:
    """``check(url, text)`` -> a reason when ``url``'s page (visible ``text``) is its directory's soft-404, else None.

    ``fetch(url) -> bytes`` fetches the probe (the crawler's fetch layer, so the probe is polite and
    counted like any request); ``text_of(body, url)`` is the crawler's visible text of a page;
    ``threshold``: the Jaccard similarity from which a page is the "not found" answer.
    """

    def __init__(self, fetch: Callable[[str], bytes], text_of: Callable[[bytes, str], str],
                 threshold: float = 0.9) -> None:
        self.fetch, self.text_of, self.threshold = fetch, text_of, threshold
        self._probes: dict[str, frozenset[str] | None] = {}
        self._answers: list[frozenset[str]] = []  # every "not found" text learned
        self._first_url: dict[int, str] = {}        # hash of a text's words -> the first URL it was seen under
        self._lock = threading.Lock()
        self.probes = 0

    @staticmethod
    def probe_url(url: str) -> str:
        """A URL in ``url``'s directory that no site has: a name from a hash of the directory."""
        parts = urllib.parse.urlsplit(url)
        directory = parts.path.rsplit("/", 1)[0] + "/"
        token = hashlib.sha1(f"{parts.netloc}{directory}".encode()).hexdigest()[:16]
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, f"{directory}focuscrawl-no-such-page-{token}", "", ""))

    def _answer(self, url: str) -> frozenset[str] | None:
        probe = self.probe_url(url)
        key = probe.rsplit("/", 1)[0]
        with self._lock:
            if key in self._probes:
                return self._probes[key]
        try:
            body = self.fetch(probe)
            answer = _words(self.text_of(body, probe))
        except FetchError:  # a true 404 (or no answer): this directory answers missing pages honestly
            answer = None
        with self._lock:
            self.probes += 1
            self._probes[key] = answer
            if answer:
                self._answers.append(answer)
        return answer

    def _similarity(self, mine: frozenset[str], answer: frozenset[str]) -> float:
        return len(mine & answer) / len(mine | answer) if mine or answer else 1.0

    def check(self, url: str, text: str, again: bool = False) -> str | None:
        """``again``: ``url``'s page was fetched and kept before (a revisit); it passed then for want of a twin,
        so its directory is probed now if it never was."""
        mine = _words(text)
        with self._lock:
            known = list(self._answers)
            first = self._first_url.setdefault(hash(mine), url)
        best = max((self._similarity(mine, a) for a in known), default=0.0)
        if best < self.threshold and (first != url or again):  # the same text under another URL, or a revisit
            answer = self._answer(url)
            best = self._similarity(mine, answer) if answer else 0.0
        if best < self.threshold:
            return None
        return (f"soft-404: answered 200 OK with the text the site gives a page that cannot exist "
                f"(probed as {self.probe_url(url)}; Jaccard {best:.2f} >= {self.threshold}); not content")


__all__ = ["Soft404Probe"]
