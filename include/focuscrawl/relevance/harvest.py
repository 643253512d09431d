"""Harvest per loop: pages fetched, relevant pages fetched and the harvest ratio over time, from the lake.

Harvest ratio (the focused crawler's measure: Chakrabarti, van den Berg & Dom, "Focused crawling: a new
approach to topic-specific Web resource discovery", WWW 1999, section 4.1) = relevant pages fetched /
pages fetched, here per loop and per time bin, and cumulative since the start. It is read from what the
live path landed in Delta, each page scored there by the project's page relevance model
(:mod:`focuscrawl.relevance.score`):

========  ==================  ==========================================================================
loop      table               a fetched item, relevant when
========  ==================  ==========================================================================
sources   ``source_pages``    a new page; ``relevance`` at or above the threshold
revisits  ``page_snapshots``  a snapshot (a revisit); ``relevance`` at or above the threshold
graph     ``graph_sample``    a vertex's page, once per crawl; ``relevant`` as the sampler judged it
fue       ``fue_extractions`` an extracted user (seed 000); the reference classifier's verdict
========  ==================  ==========================================================================

Items without a score (no page focus, no model trained yet) count in neither figure. ``focuscrawl
status`` shows the latest bins, ``focuscrawl report harvest`` the whole series and its plot.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

SERIES_COLUMNS = ["loop", "bin_start", "fetched", "relevant", "harvest", "cumulative_fetched", "cumulative_relevant",
                  "cumulative_harvest"]


@dataclass(frozen=True)
class LoopPages:
    """Where a loop's scored items are in the lake: table, time column, and how an item is judged."""

    table: str
    at: str                      # time column (timestamp, or Unix seconds when ``epoch_seconds``)
    score: str | None = None     # a relevance in [0, 1], compared with the threshold
    flag: str | None = None      # or a verdict already made (bool)
    distinct: tuple[str, ...] = ()  # one item per distinct value of these columns
    epoch_seconds: bool = False


LOOPS = {
    "sources": LoopPages("source_pages", "fetched_at", score="relevance"),
    "revisits": LoopPages("page_snapshots", "fetched_at", score="relevance"),
    "graph": LoopPages("graph_sample", "sampled_at", flag="relevant", distinct=("crawl_id", "vertex_id")),
    "fue": LoopPages("fue_extractions", "sim_epoch", flag="relevant", epoch_seconds=True),
}


def judged(frame: pd.DataFrame, pages: LoopPages, threshold: float) -> pd.DataFrame:
    """``(at, relevant)`` of each scored item of one loop's rows (unscored ones dropped)."""
    if pages.distinct:
        frame = frame.drop_duplicates(list(pages.distinct))
    column = pages.score or pages.flag
    frame = frame[frame[column].notna()]
    at = pd.to_datetime(frame[pages.at], unit="s", utc=True) if pages.epoch_seconds else pd.to_datetime(frame[pages.at], utc=True)
    relevant = frame[column].astype(float) >= threshold if pages.score else frame[column].astype(bool)
    return pd.DataFrame({"at": at.to_numpy(), "relevant": relevant.to_numpy(dtype=bool)}).dropna(subset=["at"])


def harvest_series(items: dict[str, pd.DataFrame], bin: str = "10min") -> pd.DataFrame:
    """Per loop and time bin of width ``bin`` (a pandas frequency): items fetched, relevant, their ratio, and
    the same cumulative since the loop's first item. ``items``: loop -> :func:`judged` frame."""
    parts = []
    for loop, frame in items.items():
        if frame.empty:
            continue
        grouped = frame.groupby(pd.Grouper(key="at", freq=bin))["relevant"].agg(["size", "sum"])
        grouped = grouped.rename(columns={"size": "fetched", "sum": "relevant"}).astype("int64")
        out = grouped.reset_index().rename(columns={"at": "bin_start"})
        out.insert(0, "loop", loop)
        out["harvest"] = (out.relevant / out.fetched).where(out.fetched > 0)
        out["cumulative_fetched"] = out.fetched.cumsum()
        out["cumulative_relevant"] = out.relevant.cumsum()
        out["cumulative_harvest"] = out.cumulative_relevant / out.cumulative_fetched
        parts.append(out)
    return pd.concat(parts, ignore_index=True)[SERIES_COLUMNS] if parts else pd.DataFrame(columns=SERIES_COLUMNS)


def read_items(cfg, threshold: float, loops=tuple(LOOPS)) -> dict[str, pd.DataFrame]:
    """:func:`judged` items of each loop whose table is in the lake (a loop without one is left out)."""
    from focuscrawl.lake import open_table

    out = {}
    for loop in loops:
        pages = LOOPS[loop]
        dt = open_table(cfg.table_path(pages.table))
        if dt is None:
            continue
        columns = [pages.at, pages.score or pages.flag, *pages.distinct]
        present = {f.name for f in dt.schema().fields}
        if not set(columns) <= present:  # a table landed before its loop was scored
            continue
        out[loop] = judged(dt.to_pyarrow_table(columns=columns).to_pandas(), pages, threshold)
    return out
