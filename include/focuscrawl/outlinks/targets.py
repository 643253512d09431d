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
"""

from __future__ import annotations

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
