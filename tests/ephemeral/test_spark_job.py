"""The source_schedule Spark job over real Delta tables, and its schedule followed through Kafka (seed 001).

Each test runs the job both ways: on Spark, and in its own process on pandas (``engine``: what a DAG's task does on a
small lake, ``focuscrawl.lake.spark.in_process``); the two write the same tables.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from focuscrawl.lake import ensure_table
from focuscrawl.ephemeral.tables import PAGE_CLICKS, SOURCE_ESTIMATES, SOURCE_RECRAWLS, SOURCE_SCHEDULE

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
TRUTH = {  # source: (host, λ per second, P, μ per second)
    "http://news.example/politics": ("news.example", 1 / 300, 20.0, np.log(2) / 3600),
    "http://news.example/sport": ("news.example", 1 / 600, 5.0, np.log(2) / 7200),
    "http://blog.example/feed.xml": ("blog.example", 1 / 3600, 8.0, np.log(2) / 86400),
}


def _job(cfg):
    spec = importlib.util.spec_from_file_location("source_schedule_job", cfg.home / "spark_jobs" / "source_schedule.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    return job


def _append(spec, rows: pd.DataFrame, lake):
    path = spec.path(lake)
    ensure_table(path, spec)
    # made here, not fetched: the spec's other columns (a fetch's WARC record) are null
    rows = rows.assign(**{name: None for name in spec.column_names if name not in rows})
    write_deltalake(path, pa.Table.from_pandas(rows[spec.column_names], schema=spec.arrow_schema(), preserve_index=False,
                                             safe=False),
                    mode="append")


@pytest.fixture(params=["spark", "in_process"])
def engine(request):
    """The job's session: the tests' Spark, or None (in this process, on pandas)."""
    return request.getfixturevalue("spark") if request.param == "spark" else None


@pytest.fixture()
def lake(cfg, tmp_path):
    lake = dataclasses.replace(cfg, lake=str(tmp_path / "lake"), var_dir=tmp_path / "var")
    rng = np.random.default_rng(5)
    recrawls, clicks = [], []
    for source, (host, lam, P, mu) in TRUTH.items():
        elapsed = rng.uniform(120, 900, 300)
        at = T0 + pd.to_timedelta(np.cumsum(elapsed), unit="s")
        recrawls.append(pd.DataFrame({"source_url": source, "host": host, "recrawled_at": at, "elapsed_s": elapsed,
                                      "new_links": rng.poisson(lam * elapsed)}))
        created = T0 + pd.to_timedelta(rng.uniform(0, 3 * 86400, 300), unit="s")
        latest_age = rng.uniform(1200, 86400, 300)
        # news pages: clicks counted from their crawl (what a search engine sees); the blog's: since creation
        crawl_delay = rng.uniform(0, 600, 300) if host == "news.example" else np.zeros(300)
        for ages in (latest_age / 2, latest_age):  # two observations per page: the job keeps the latest
            observed = created + pd.to_timedelta(ages, unit="s")
            share = np.exp(-mu * crawl_delay) - np.exp(-mu * np.asarray(ages))
            clicks.append(pd.DataFrame({"source_url": source, "page_url": [f"{source}/p{i}" for i in range(300)],
                                        "created_at": created, "observed_at": observed,
                                        "counted_from": created + pd.to_timedelta(crawl_delay, unit="s")
                                        if host == "news.example" else pd.NaT,
                                        "clicks": rng.poisson(P * share)}))
    _append(SOURCE_RECRAWLS, pd.concat(recrawls), lake)
    _append(PAGE_CLICKS, pd.concat(clicks), lake)
    return lake


def test_job_fits_estimates_and_writes_a_polite_schedule_within_budget(engine, cfg, lake):
    job = _job(cfg)
    budget = 0.02
    assert job.run(engine, lake, budget=budget, host_min_interval_s=120.0) == 3
    assert job.run(engine, lake, budget=budget, host_min_interval_s=120.0) == 3  # a rerun replaces
    from focuscrawl.ephemeral.fitted import model_store  # each run's estimates: a version, with what it read

    stored = model_store(lake).versions("estimates")
    assert [v.delta_versions for v in stored] == [{"source_recrawls": DeltaTable(SOURCE_RECRAWLS.path(lake)).version(),
                                                   "page_clicks": DeltaTable(PAGE_CLICKS.path(lake)).version()}] * 2
    assert model_store(lake).champion("estimates").version == 2 and stored[0].params["sources"] == 3
    est = DeltaTable(SOURCE_ESTIMATES.path(lake)).to_pandas().set_index("source_url")
    for source, (_, lam, P, mu) in TRUTH.items():
        row = est.loc[source]
        assert abs(row.lam - lam) < 3 * row.lam_sd and row.lam_sd < 0.2 * lam, source
        # the blog's pages are younger than its 1-day half-life: P is honestly uncertain there
        assert abs(row.P - P) < 3 * row.P_sd, source
        assert abs(row.mu - mu) < 3 * row.mu_sd + 0.1 * mu, source
        assert est.loc[source, "n_pages"] == 300 and est.loc[source, "n_recrawls"] == 300
    table = DeltaTable(SOURCE_SCHEDULE.path(lake))
    assert table.metadata().description == SOURCE_SCHEDULE.comment
    plan = table.to_pandas().set_index("source_url")
    assert plan.recrawl_rate.sum() + plan.page_rate.sum() == pytest.approx(budget, rel=1e-6)
    # politeness: news.example's two sources share one fetch per 120 s
    assert plan.loc[plan.host == "news.example", "recrawl_rate"].max() <= 1 / 240 + 1e-12
    # politics is worth the most, so its share of the host's politeness limit is the binding one
    assert plan.loc["http://news.example/politics", "recrawl_rate"] == pytest.approx(1 / 240, rel=1e-6)
    assert (plan.recrawl_interval_s * plan.recrawl_rate).dropna().to_numpy() == pytest.approx(1.0)


def test_job_plans_from_recrawls_before_the_first_click(engine, cfg, tmp_path):
    """source_schedule runs on the recrawls' Asset while no click has landed yet (the live platform's
    first minutes): every source is planned from its recrawls, none from a click table that isn't there."""
    job, lake = _job(cfg), dataclasses.replace(cfg, lake=str(tmp_path / "lake"), var_dir=tmp_path / "var")
    elapsed = np.full(50, 300.0)
    _append(SOURCE_RECRAWLS, pd.DataFrame({"source_url": "http://news.example/politics", "host": "news.example",
                                           "recrawled_at": T0 + pd.to_timedelta(np.cumsum(elapsed), unit="s"),
                                           "elapsed_s": elapsed, "new_links": 1}), lake)
    assert job.run(engine, lake, budget=0.02, host_min_interval_s=120.0) == 1
    est = DeltaTable(SOURCE_ESTIMATES.path(lake)).to_pandas().set_index("source_url")
    assert est.loc["http://news.example/politics", "n_recrawls"] == 50
    assert DeltaTable(PAGE_CLICKS.path(lake)).to_pandas().empty


def test_job_fits_relevance_feedback_from_the_fetched_pages(engine, cfg, tmp_path):
    """``--feedback RELEVANCE``: P from the relevance of each source's fetched pages (source_pages), discounted by
    the fetch delay with the stated half-life, which is every source's μ; no click table is read or needed."""
    from focuscrawl.ephemeral.tables import SOURCE_PAGES

    job, lake = _job(cfg), dataclasses.replace(cfg, lake=str(tmp_path / "lake"), var_dir=tmp_path / "var")
    rng = np.random.default_rng(3)
    half_life = 3600.0
    recrawls, pages = [], []
    for source, host, relevance in (("http://on.example/feed", "on.example", 0.9),
                                    ("http://off.example/feed", "off.example", 0.1)):
        elapsed = np.full(100, 600.0)
        recrawls.append(pd.DataFrame({"source_url": source, "host": host, "elapsed_s": elapsed, "new_links": 2,
                                      "recrawled_at": T0 + pd.to_timedelta(np.cumsum(elapsed), unit="s")}))
        published = T0 + pd.to_timedelta(rng.uniform(0, 86400, 200), unit="s")
        delay = rng.uniform(0, 2 * half_life, 200)
        pages.append(pd.DataFrame({"page_url": [f"{source}/p{i}" for i in range(200)], "source_url": source,
                                   "host": host, "published_at": published,
                                   "fetched_at": published + pd.to_timedelta(delay, unit="s"),
                                   "relevance": np.clip(rng.normal(relevance, 0.05, 200), 0, 1)}))
    _append(SOURCE_RECRAWLS, pd.concat(recrawls), lake)
    _append(SOURCE_PAGES, pd.concat(pages), lake)
    assert job.run(engine, lake, budget=0.01, host_min_interval_s=120.0, feedback="RELEVANCE",
                   freshness_half_life_s=half_life) == 2
    est = DeltaTable(SOURCE_ESTIMATES.path(lake)).to_pandas().set_index("source_url")
    assert est.loc["http://on.example/feed", "P"] == pytest.approx(0.9, abs=0.1)
    assert est.loc["http://off.example/feed", "P"] == pytest.approx(0.1, abs=0.1)
    assert est["mu"].to_numpy() == pytest.approx(np.full(2, np.log(2) / half_life))
    assert (est["n_pages"] == 200).all()
    assert not DeltaTable.is_deltatable(PAGE_CLICKS.path(lake))
    plan = DeltaTable(SOURCE_SCHEDULE.path(lake)).to_pandas().set_index("source_url")
    assert plan.loc["http://on.example/feed", "recrawl_rate"] > plan.loc["http://off.example/feed", "recrawl_rate"]


def test_both_engines_write_the_same_estimates_and_schedule(spark, cfg, lake, tmp_path):
    """On one lake's recrawls and clicks, Spark and pandas fit the same λ, P, μ and plan the same schedule."""
    job, written = _job(cfg), []
    for engine in (spark, None):
        var = dataclasses.replace(lake, var_dir=tmp_path / f"var-{'spark' if engine else 'pandas'}")
        assert job.run(engine, var, budget=0.02, host_min_interval_s=120.0) == 3
        written.append([DeltaTable(spec.path(var)).to_pandas().sort_values("source_url", ignore_index=True)
                        for spec in (SOURCE_ESTIMATES, SOURCE_SCHEDULE)])
    for on_spark, here in zip(*written):
        pd.testing.assert_frame_equal(here, on_spark, rtol=1e-9)


def test_schedule_is_published_and_followed_by_the_crawler(spark, cfg, lake, kafka_broker, topic):
    from focuscrawl.ephemeral.crawler import SourceCrawler
    from focuscrawl.ephemeral.schedule_topic import ScheduleFollower, publish_schedule
    from focuscrawl.ephemeral.sources import ContentSource

    _job(cfg).run(spark, lake, budget=0.02, host_min_interval_s=120.0)
    assert publish_schedule(dataclasses.replace(lake, kafka_bootstrap=cfg.kafka_bootstrap), topic) == 3
    empty_feed = b'<?xml version="1.0"?><rss version="2.0"><channel><title>x</title></channel></rss>'
    crawler = SourceCrawler([ContentSource(s, "feed") for s in TRUTH], lambda url: (empty_feed, "application/rss+xml", url),
                            lambda *a: None, lambda: 0.0, budget=0.02, default_interval_s=7200.0)
    received = {}
    follower = ScheduleFollower(cfg.kafka_bootstrap, topic, lambda key, row: (received.__setitem__(key, row),
                                                                               crawler.apply(key, row)))
    follower.start()
    try:
        assert follower.caught_up.wait(60)
    finally:
        follower.stop()
        follower.join(10)
    expected = DeltaTable(SOURCE_SCHEDULE.path(lake)).to_pandas().set_index("source_url")
    for source in TRUTH:  # the whole row travels: rate as the score, ν, P and μ beside it
        row = expected.loc[source]
        assert received[source]["score"] == pytest.approx(row.recrawl_rate)
        assert (received[source]["skip_below"], received[source]["P"], received[source]["mu"]) == pytest.approx(
            (row.skip_below, row.P, row.mu))
        # and the fit that made it: the schedule's Delta version pushed, the source's rank by rate in the push
        assert (received[source]["model"], received[source]["model_version"]) == (
            "source_schedule", DeltaTable(SOURCE_SCHEDULE.path(lake)).version())
    by_rate = sorted(TRUTH, key=lambda s: -expected.loc[s, "recrawl_rate"])
    assert [received[s]["rank"] for s in by_rate] == [1, 2, 3]
    assert crawler.step() == "recrawl"  # the next slot takes the pushed plan up
    for source in TRUTH:
        interval = expected.loc[source, "recrawl_interval_s"]
        assert crawler.interval(source) == (pytest.approx(interval) if interval == interval else None)
    assert crawler.policy.skip_below_ == pytest.approx(expected.skip_below.iloc[0])
