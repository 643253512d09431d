"""The project switch skip_near_duplicates: the revisitor and the source crawler skip a new page that
near-duplicates one fetched before, count it in their metrics, and keep doing so after a restart.

Planted pages: an original, its exact copy, a copy sharing 90% of its text (shingle Jaccard ~0.82,
a near-duplicate at the threshold 0.7), one sharing 50% (~0.33, not one) and an unrelated page.
"""

from __future__ import annotations

import numpy as np
import pytest

from focuscrawl.core.dedup import NearDuplicateIndex
from focuscrawl.ephemeral.crawler import SourceCrawler
from focuscrawl.ephemeral.sources import ContentSource
from focuscrawl.stream.metrics import Metrics
from focuscrawl.outlinks.revisit import WEEK, PageRevisitor, SnapshotWriter
from focuscrawl.platform.plan import plan

SITE = "http://127.0.0.1:9/site/s.wiki.test/wiki/"
RNG = np.random.default_rng(7)
WORDS = [f"w{i}" for i in range(3000)]


def words(n: int) -> list[str]:
    return [str(w) for w in RNG.choice(WORDS, n)]


ORIGINAL = words(200)
TEXTS = {
    "Original": ORIGINAL,
    "Exact": ORIGINAL,
    "Ninety": ORIGINAL[:180] + words(20),
    "Half": ORIGINAL[:100] + words(100),
    "Other": words(200),
}
SKIPPED = {"Exact", "Ninety"}


def html(text: list[str], links: list[str]) -> bytes:
    anchors = "".join(f'<a href="{u}">link</a>' for u in links)
    return f"<html><body><p>{' '.join(text)}</p>{anchors}</body></html>".encode()


class PlantedSite:
    """The original links to every other page; each other page links back to it."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def get(self, url: str) -> bytes:
        self.log.append(url)
        name = url.rsplit("/", 1)[-1]
        links = [SITE + n for n in TEXTS if n != "Original"] if name == "Original" else [SITE + "Original"]
        return html(TEXTS[name], links)


def revisit_two_periods(index: NearDuplicateIndex | None, metrics: Metrics):
    site, rows, now = PlantedSite(), [], [0.0]
    rev = PageRevisitor(site, rows.append, lambda: now[0], discover=r"/wiki/", near_duplicates=index,
                        on_near_duplicate=lambda *_: metrics.near_duplicates.labels("revisits").inc())
    rev.add([SITE + "Original"])
    for _ in range(2):
        rev.revisit_next()
        while rev.due():
            rev.revisit_next()
        now[0] += WEEK
    return rev, rows, site


def names(urls) -> list[str]:
    return [u.rsplit("/", 1)[-1] for u in urls]


def test_revisitor_skips_new_near_duplicates_and_counts_them():
    metrics = Metrics("revisitor")
    rev, rows, site = revisit_two_periods(NearDuplicateIndex(), metrics)
    # period 0: every page fetched once; the exact and the 90% copy are skipped, so never revisited
    assert names(site.log) == ["Original", "Exact", "Ninety", "Half", "Other", "Original", "Half", "Other"]
    assert names(r["url"] for r in rows) == ["Original", "Half", "Other", "Original", "Half", "Other"]
    assert names(rev.skipped) and set(names(rev.skipped)) == SKIPPED
    assert rev.status()["known"] == 3 and rev.status()["near_duplicates_skipped"] == 2
    assert metrics.snapshot()["near_duplicates_skipped_total"] == 2.0


def test_revisitor_without_the_switch_keeps_every_page():
    metrics = Metrics("revisitor")
    rev, rows, _ = revisit_two_periods(None, metrics)
    assert len(rows) == 10 and rev.status()["near_duplicates_skipped"] == 0
    assert metrics.snapshot()["near_duplicates_skipped_total"] == 0.0


def test_restarted_revisitor_rebuilds_its_index_from_the_table(tmp_path):
    writer = SnapshotWriter(str(tmp_path / "page_snapshots"))
    rev = PageRevisitor(PlantedSite(), writer, lambda: 0.0, near_duplicates=NearDuplicateIndex())
    rev.add([SITE + "Original", SITE + "Other"])
    rev.revisit_next(), rev.revisit_next()
    writer.flush()
    # a new process: the index from the table's latest texts (what streaming/revisitor.py does on start)
    index = NearDuplicateIndex()
    for url, text in writer.latest_texts().items():
        index.add(url, text)
    assert sorted(names(index.signatures)) == ["Original", "Other"]
    rows = []
    again = PageRevisitor(PlantedSite(), rows.append, lambda: WEEK, near_duplicates=index)
    again.restore(writer.history())
    again.add([SITE + "Ninety", SITE + "Half"])
    while again.due():
        again.revisit_next()
    assert names(r["url"] for r in rows) == ["Original", "Other", "Half"] and names(again.skipped) == ["Ninety"]


def source_crawler(index):
    pages = {f"http://n.example/{name}": html(text, []) for name, text in TEXTS.items()}
    feed = "".join(f"<item><link>{u}</link></item>" for u in pages)
    rss = f'<?xml version="1.0"?><rss version="2.0"><channel><title>x</title>{feed}</channel></rss>'.encode()
    metrics = Metrics("source-crawler")

    def fetch(url):
        return (rss, "application/rss+xml", url) if url.endswith("/feed") else (pages[url], "text/html", url)

    crawler = SourceCrawler([ContentSource("http://n.example/feed", "feed")], fetch, lambda *a: None, lambda: 0.0,
                            budget=1.0, near_duplicates=index,
                            on_near_duplicate=lambda *_: metrics.near_duplicates.labels("sources").inc())
    return crawler, metrics


def crawl_all(crawler) -> None:
    assert crawler.step() == "recrawl"
    while crawler.policy.frontier.batches[0]:
        assert crawler.step() == "page"


def test_source_crawler_skips_near_duplicates_counts_them_and_restores_its_index():
    crawler, metrics = source_crawler(NearDuplicateIndex())
    crawl_all(crawler)
    assert crawler.counts["pages"] == 5 and crawler.counts["near_duplicates_skipped"] == 2
    assert metrics.snapshot()["near_duplicates_skipped_total"] == 2.0
    crawled = {u.rsplit("/", 1)[-1] for u in crawler.crawled_}
    # whichever of the original and its two copies came first is crawled, the other two are skipped
    kept = crawled & {"Original", "Exact", "Ninety"}
    assert len(kept) == 1 and crawled - kept == {"Half", "Other"}
    clicks = crawler.click_rows({"until": 10.0, "clicks": [{"url": f"http://n.example/{n}", "crawled_at": 1.0,
                                                             "clicks": 3} for n in TEXTS]})
    assert {r["page_url"].rsplit("/", 1)[-1] for r in clicks} == crawled  # a skipped page gets no click rows
    # the crawled pages' signatures travel in the changelog: a restarted crawler still knows them
    records = crawler.changes()
    assert sum('"minhash"' in v.decode() for k, v in records if k.startswith("page:")) == 3
    fresh, _ = source_crawler(NearDuplicateIndex())
    fresh.restore(records)
    assert len(fresh.near_duplicates) == 3
    assert fresh.near_duplicates.check(" ".join(ORIGINAL)).duplicate_of == f"http://n.example/{min(kept)}"
    assert fresh.near_duplicates.check(" ".join(words(200))) is None


def test_source_crawler_without_the_switch_crawls_every_page():
    crawler, metrics = source_crawler(None)
    crawl_all(crawler)
    assert len(crawler.crawled_) == 5 and crawler.counts["near_duplicates_skipped"] == 0
    assert all('"minhash"' not in v.decode() for _, v in crawler.changes())


@pytest.mark.parametrize("switch", [False, True])
def test_the_project_switch_reaches_both_processes(tmp_path, switch, monkeypatch):
    from focuscrawl.config import settings
    from focuscrawl.project.loading import parse_project

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    (tmp_path / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n')
    (tmp_path / "neg.csv").write_text("author,title\nc,game night\n")
    raw = {"name": "t", "target": "world", "profile": {"positives": "pos.jsonl", "negatives": "neg.csv"},
           "sites": [{"name": "w", "world": True, "user_agent": "t/1 (+mailto:ops@example.org)"}],
           "loops": {"fue": {"enabled": False}, "graph": {"enabled": False},
                     "sources": {"skip_near_duplicates": switch}, "revisits": {"skip_near_duplicates": switch}}}
    project = parse_project(raw, base_dir=tmp_path)
    specs = {s.name: s for s in plan(project, settings(), airflow=False)}
    for name in ("source-crawler", "revisitor"):
        assert ("--skip-near-duplicates" in specs[name].command) is switch
