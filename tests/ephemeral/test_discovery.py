"""Content-source discovery of seed 001, section 3: new links, ranking, greedy max coverage."""

import pandas as pd

from focuscrawl.ephemeral.discovery import choose_sources, new_page_links, rank_sources

LINKS = pd.DataFrame(
    [("A", "p1", 1), ("A", "p2", 1), ("B", "p2", 1), ("B", "p3", 1), ("C", "p4", 1), ("D", "p5", 1)],
    columns=["source_url", "discovered_page_url", "discovered_at"],
)
PROFIT = pd.DataFrame({"page_url": ["p1", "p2", "p3", "p4", "p5"], "profit": [10.0, 5.0, 1.0, 8.0, 0.5]})


def test_greedy_max_coverage_stops_at_the_target_share():
    chosen = choose_sources(LINKS, PROFIT, coverage=0.9)
    assert list(chosen.source_url) == ["A", "C"]  # A covers 15, C 8 more; B would add only p3 (1)
    assert list(chosen.profit_gain) == [15.0, 8.0]
    assert chosen.coverage.iloc[-1] == 23.0 / 24.5


def test_greedy_counts_shared_pages_once_and_respects_max_sources():
    chosen = choose_sources(LINKS, PROFIT, coverage=1.0)
    assert list(chosen.source_url) == ["A", "C", "B", "D"]
    assert list(chosen.profit_gain) == [15.0, 8.0, 1.0, 0.5]
    assert list(choose_sources(LINKS, PROFIT, coverage=1.0, max_sources=1).source_url) == ["A"]


def test_rank_sources_by_profit_led_to():
    ranked = rank_sources(LINKS, PROFIT)
    assert list(ranked.source_url) == ["A", "C", "B", "D"]
    assert list(ranked.profit) == [15.0, 8.0, 6.0, 0.5]


def test_new_page_links_drops_the_archive_seen_at_first_crawl_and_repeats():
    history = pd.DataFrame(
        [("S", "old", 0), ("S", "old", 100), ("S", "new", 100), ("S", "new", 200), ("T", "x", 50)],
        columns=["source_url", "discovered_page_url", "discovered_at"],
    )
    new = new_page_links(history)
    assert new.values.tolist() == [["S", "new", 100]]
