"""The thin loop end to end, every engine real (issue 2, point 5).

world (HTTP) -> crawler process (requests) -> Kafka -> consumer process -> Delta (delta-rs, offsets in
the commit) -> Airflow DAG run: spark-submit job reads Delta with delta-spark, writes priorities ->
publish to the compacted topic -> the running crawler's next pick follows the new order.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from focuscrawl.delta_sink import table_rows
from focuscrawl.services.process import wait_until
from focuscrawl.status import read_status

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def test_crawl_stream_land_learn_push_and_the_next_pick_follows(cfg, kafka_broker, world_service, airflow, spark, tmp_path):
    from focuscrawl.crawl.listing_crawler import POSTS_TABLE, POSTS_TOPIC
    from focuscrawl.user_priority import USER_PRIORITIES_TABLE

    posts_table = POSTS_TABLE.path(cfg)
    # The session's lake is shared: other tests may have put posts there before this one.
    already = table_rows(posts_table)
    status_file = tmp_path / "crawler.json"
    logs = Path(cfg.var_dir) / "logs"
    consumer = _spawn(["streaming/consumer.py", "--topic", POSTS_TOPIC, "--table", "reddit_posts",
                       "--group", "e2e-posts", "--batch-seconds", "1"], logs / "e2e-consumer.log")
    crawler = _spawn(["streaming/crawler.py", "--base-url", world_service.url, "--max-pages", "3",
                      "--interval", "1", "--status-file", str(status_file)], logs / "e2e-crawler.log")
    try:
        # 1. The crawler fetched its pages and every post it produced landed in Delta exactly once.
        status = wait_until(lambda: (s := read_status(status_file)).get("pages") == 3 and s,
                            180, f"crawler did not fetch 3 pages; see {logs / 'e2e-crawler.log'}")
        produced = status["posts"]
        assert produced > 0
        wait_until(lambda: table_rows(posts_table) >= already + produced, 180,
                   f"consumer did not land {produced} rows; see {logs / 'e2e-consumer.log'}")
        posts = spark.read.format("delta").load(posts_table)
        assert posts.count() == already + produced
        assert posts.select("name").distinct().count() == already + produced
        before = read_status(status_file)
        # Before any push every candidate has the new-candidate score: the pick is arrival order.
        assert before["next_pick_score"] < 0

        # 2. A real Airflow run: spark-submit job, then the publish task.
        airflow.wait_for_dag("thin_loop")
        airflow.unpause("thin_loop")
        run_id = airflow.trigger("thin_loop", {"min_posts": 1})
        state = airflow.wait("thin_loop", run_id, timeout=900)
        assert state == "success", airflow.task_log("thin_loop", run_id, "user_priorities")[-3000:]

        priorities = spark.read.format("delta").load(USER_PRIORITIES_TABLE.path(cfg))
        top = priorities.orderBy(priorities.priority.desc(), priorities.author).first()
        assert top is not None and top.priority == 1.0

        # 3. The running crawler (never restarted) now picks the top-priority user next.
        after = wait_until(lambda: (s := read_status(status_file)).get("priorities_applied", 0) > 0 and s,
                           120, "crawler never applied a pushed priority")
        after = wait_until(lambda: (s := read_status(status_file))["next_pick_score"] == 1.0 and s, 60,
                           f"crawler's pick did not follow the pushed order: {after}")
        assert after["next_pick"] in {r.author for r in priorities.where("priority = 1.0").collect()}
        assert after["candidates"] >= before["candidates"]
        assert crawler.poll() is None, "the crawler was restarted or died"
    finally:
        for proc in (crawler, consumer):
            proc.terminate()
        for proc in (crawler, consumer):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
