"""Prediction targets per page and period (seed 002, Section 5.1 and Section 7).

Between two consecutive snapshots of a page (periods ``s < t``), an outlink of snapshot ``t`` is
*new* when no earlier snapshot of the page had it: links that come back after a week off (rotating
ads, "related" boxes) are not discoveries for a crawler that already queued them. Per interval:

- NNL: number of new outlinks; NL: presence of new outlinks (NNL > 0);
- LCR: link change rate, the fraction of intervals of a window in which NL held (features.py
  computes it over the history window plus the target interval);
- content change: the content digest (computed over the page content, excluding outlinks)
  differs from the previous snapshot; its rate over a window is the CCR baseline.

Each count is kept for internal and external outlinks separately (by registered domain).
The first snapshot of a page has no interval, hence no target row.

Which outlinks count (``[loops.revisits] target``): ``new_outlinks`` counts every one, as the seed does;
``new_relevant_outlinks`` counts only the links about the project's page focus, so the same features
and models learn which pages gain *relevant* new links. A link is relevant when the page it points to,
once fetched, scored at or above the focus's threshold (its latest score in ``page_snapshots``), or,
not fetched yet, when the words of its URL do (:func:`link_relevance`; the snapshots keep no anchor
text, so the URL is all a crawler knows of an unfetched link). :func:`keep_links` cuts each snapshot's
outlinks to the relevant ones before the targets are counted (ACHE's link classifier judges a link by
its URL and anchor the same way: Vieira et al., "Finding seeds to bootstrap focused crawlers", WWW
Journal 2016, section 3).
"""

from __future__ import annotations

import re
from typing import Callable, Container, Iterable, Mapping, Sequence
from urllib.parse import unquote, urlsplit

import pandas as pd

from focuscrawl.outlinks.schema import SCOPES

LINK_COLUMNS = {"int": "internal_outlinks", "ext": "external_outlinks"}
TARGET_COLUMNS = ["url", "period", "nnl_int", "nnl_ext", "nl_int", "nl_ext", "content_changed"]


def page_targets(pages: pd.DataFrame) -> pd.DataFrame:
    """Targets of the snapshots in ``pages`` (any pages, any order): one pass in (url, period) order.

    A pure function; Spark runs it per url with applyInPandas, pandas callers pass every page at once.
    """
    pages = pages.sort_values(["url", "period"])
    rows = []
    current_url = None
    seen: dict[str, set] = {}
    previous_digest = None
    columns = [pages[c].tolist() for c in ("url", "period", "content_digest", *LINK_COLUMNS.values())]
    for url, period, digest, *links in zip(*columns):
        first = url != current_url
        if first:
            current_url, seen = url, {scope: set() for scope in SCOPES}
        counts = []
        for scope, scope_links in zip(SCOPES, links):
            new_links = set(scope_links if scope_links is not None else ()) - seen[scope]
            counts.append(len(new_links))
            seen[scope] |= new_links
        if not first:
            rows.append((url, int(period), counts[0], counts[1], counts[0] > 0, counts[1] > 0, digest != previous_digest))
        previous_digest = digest
    out = pd.DataFrame(rows, columns=TARGET_COLUMNS)
    return out.astype({"period": "int32", "nnl_int": "int32", "nnl_ext": "int32", "nl_int": bool, "nl_ext": bool,
                       "content_changed": bool})


def targets(snapshots: pd.DataFrame) -> pd.DataFrame:
    """Targets of every page: one row per (url, period) that follows an earlier snapshot of the url."""
    return page_targets(snapshots)


def url_words(url: str) -> str:
    """The words of a link's URL (host, path and query, unquoted, split at anything but letters and digits):
    what the page model scores for a link whose page was not fetched yet."""
    parts = urlsplit(url)
    return " ".join(re.findall(r"[^\W_]+", unquote(" ".join((parts.hostname or "", parts.path, parts.query)))))


def link_relevance(links: Iterable[str], page_scores: Mapping[str, float | None],
                   score_texts: Callable[[list[str]], Sequence[float | None]]) -> dict[str, float | None]:
    """The relevance of each distinct link: its page's score (``page_scores``: the latest score of each
    fetched page) when there is one, else ``score_texts`` of its :func:`url_words` (None: not scored, e.g.
    before any page model was trained)."""
    links = list(dict.fromkeys(links))
    out = {u: page_scores.get(u) for u in links}
    unscored = [u for u in links if out[u] is None]
    if unscored:
        out.update(zip(unscored, score_texts([url_words(u) for u in unscored])))
    return out


def keep_links(pages: pd.DataFrame, relevant: Container[str]) -> pd.DataFrame:
    """``pages`` with each snapshot's outlinks (internal and external) cut to those in ``relevant``:
    :func:`page_targets` of the result counts new relevant outlinks."""
    out = pages.copy()
    for column in LINK_COLUMNS.values():
        out[column] = [None if links is None else [u for u in links if u in relevant] for links in out[column]]
    return out
