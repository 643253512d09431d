"""Find the content sources worth watching: a small set of pages that led to most of the profit.

Seed 001 (*Timely crawling of high-quality ephemeral new content*), section 3: "most ephemeral new content can indeed be found at a
small set of content sources", found from crawl history. A source *covers* the new pages first
seen on it; a page linked from several sources needs only one of them, so choosing k sources that
cover the most profit is maximum coverage, solved greedily (each step adds the source with the
largest profit not yet covered: the classic (1 − 1/e) approximation) until the chosen set covers
the target share of all profit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def new_page_links(history: pd.DataFrame) -> pd.DataFrame:
    """Keep links that were *new* when seen: discovered after the source's first crawl.

    ``history``: source_url, discovered_page_url, discovered_at (one row per link seen per crawl).
    Links present at a source's first crawl are its archive, not content it produced.
    """
    first_crawl = history.groupby("source_url")["discovered_at"].transform("min")
    firsts = history.groupby(["source_url", "discovered_page_url"])["discovered_at"].transform("min")
    is_new = (history["discovered_at"] == firsts) & (history["discovered_at"] > first_crawl)
    return history.loc[is_new, ["source_url", "discovered_page_url", "discovered_at"]]


def rank_sources(links: pd.DataFrame, profit: pd.DataFrame) -> pd.DataFrame:
    """Sources by the total profit of the new pages they led to (``profit``: page_url, profit)."""
    led = links.merge(profit.rename(columns={"page_url": "discovered_page_url"}), on="discovered_page_url")
    ranked = led.groupby("source_url").agg(pages=("discovered_page_url", "nunique"), profit=("profit", "sum"))
    return ranked.sort_values(["profit", "pages"], ascending=False).reset_index()


def choose_sources(links: pd.DataFrame, profit: pd.DataFrame, coverage: float = 0.9, max_sources: int | None = None) -> pd.DataFrame:
    """Greedy maximum coverage: sources in the order chosen, with the cumulative profit share covered."""
    led = links.merge(profit.rename(columns={"page_url": "discovered_page_url"}), on="discovered_page_url")
    led = led.drop_duplicates(["source_url", "discovered_page_url"])
    page_codes, pages = pd.factorize(led["discovered_page_url"])
    source_codes, sources = pd.factorize(led["source_url"])
    page_profit = np.zeros(len(pages))
    page_profit[page_codes] = led["profit"].to_numpy(dtype=float)
    total = page_profit.sum()
    covered = np.zeros(len(pages), dtype=bool)
    chosen, gains, shares = [], [], []
    limit = len(sources) if max_sources is None else min(max_sources, len(sources))
    while len(chosen) < limit and total > 0 and page_profit[covered].sum() < coverage * total:
        gain = np.bincount(source_codes, weights=np.where(covered[page_codes], 0.0, page_profit[page_codes]),
                           minlength=len(sources))
        gain[chosen] = -1.0
        best = int(np.argmax(gain))
        if gain[best] <= 0:
            break
        chosen.append(best)
        covered[page_codes[source_codes == best]] = True
        gains.append(float(gain[best]))
        shares.append(float(page_profit[covered].sum() / total))
    return pd.DataFrame({"source_url": sources[chosen], "profit_gain": gains, "coverage": shares})
