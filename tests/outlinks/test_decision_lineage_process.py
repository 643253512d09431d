"""Why was this fetched, and by which model: streaming/revisitor.py against the world over HTTP follows two pushes
of page priorities (model versions 1 and 2, published from page_priorities as spark_jobs/outlinks_score.py does)
through real Kafka, lands its snapshots in Delta, and the query documented in docs/querying.md, run by Spark over
the lake, gives for 10 random fetches the model version, score and rank the push said."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from focuscrawl.core.status_file import read_status
from focuscrawl.crawl.listing_crawler import POSTS_TABLE
from focuscrawl.ephemeral.tables import SOURCE_PAGES, SOURCE_RECRAWLS
from focuscrawl.fue.pipeline import STATS_TABLE
from focuscrawl.lake import ensure_table
from focuscrawl.outlinks.tables import PAGE_PRIORITIES
from focuscrawl.project.loading import parse_project
from focuscrawl.services.process import wait_until
from focuscrawl.stream.spec import FetchSpec
from focuscrawl.topics.priority import publish_table
from focuscrawl.world.server import WorldServer
from tests.world.conftest import small_world

ROOT = Path(__file__).resolve().parents[2]
MODEL = "NNL-ET_LBLA/int"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def documented_query(database: str) -> str:
    """The query of docs/querying.md#why-was-this-fetched, reading the tables of ``database``."""
    page = (ROOT / "docs" / "querying.md").read_text()
    section = page.split("## Why was this fetched", 1)[1]
    sql = re.search(r"```sql\n(.*?)```", section, re.S).group(1)
    return sql.replace("focuscrawl.", f"{database}.").rstrip().rstrip(";")


def push(path: Path, bootstrap: str, topic: str, version: int, scores: dict[str, float]) -> dict[str, tuple]:
    """Write ``scores`` as page_priorities (model version ``version``) and publish the table as the outlinks DAG
    does; returns ``{url: (score, rank)}``, the push as the revisitor is told it."""
    from deltalake import write_deltalake

    rows = [{"url": u, "predicted": 10 * s, "score": s, "model": MODEL, "model_version": version, "period": version}
            for u, s in scores.items()]
    write_deltalake(str(path), pa.Table.from_pylist(rows, schema=PAGE_PRIORITIES.arrow_schema()), mode="overwrite")
    assert publish_table(str(path), bootstrap, topic, key_column="url", score_column="score") == len(rows)
    by_score = sorted(scores, key=lambda u: -scores[u])
    return {u: (scores[u], by_score.index(u) + 1) for u in scores}


def test_the_documented_query_gives_the_model_version_score_and_rank_each_push_chose_a_page_by(
        cfg, kafka_broker, spark, tmp_path):
    from deltalake import DeltaTable

    from focuscrawl.lake.spark import register_tables

    lake, topic = tmp_path / "lake", f"focuscrawl.test.prio.{uuid.uuid4().hex[:8]}"
    with WorldServer(small_world(seed=3, web=True, users=1000)) as world:
        web = world.world.web
        pages = [world.url + web.page_path(p) for p in web.pages_of_host[web.hosts[0]][:24]]
        site = parse_project({"name": "lineage", "target": "sites", "profile": {"query": "x"},
                              "sites": [{"name": "w", "base_url": world.url, "politeness_delay": 0.0,
                                         "user_agent": "focuscrawl-test (+mailto:t@example.org)"}]}).site("w")
        spec = FetchSpec(site=site, pace=0.05).write(tmp_path / "w.json")
        env = {**os.environ, "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": world.url.split("//")[1], "FOCUSCRAWL_LAKE": str(lake)}
        table, status_file, log = lake / "page_snapshots", tmp_path / "revisitor.json", tmp_path / "revisitor.log"
        # version 1 scores 20 of the 24 pages (4 stay unscored: the baseline order chooses them), version 2 reverses it
        pushes = {1: push(tmp_path / "priorities", kafka_broker.url, topic, 1,
                          {u: round((i + 1) / 20, 2) for i, u in enumerate(pages[:20])})}
        args = ["streaming/revisitor.py", *(a for u in pages for a in ("--seed", u)), "--max-pages", "100",
                "--clock", "wall", "--interval-days", str(12 / 86400), "--idle", "0.2", "--flush-every", "1",
                "--bootstrap", kafka_broker.url, "--fetch-spec", str(spec), "--table", str(table),
                "--control-topic", f"focuscrawl.test.control.{uuid.uuid4().hex[:8]}", "--priority-topic", topic,
                "--status-file", str(status_file)]
        proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=log.open("ab"),
                                stderr=subprocess.STDOUT, start_new_session=True)

        def landed() -> list[dict]:
            return DeltaTable(str(table)).to_pyarrow_table().to_pylist() if DeltaTable.is_deltatable(str(table)) else []

        def chosen_by(version: int) -> int:
            return len({r["url"] for r in landed() if r["chosen_by_model_version"] == version})

        try:
            wait_until(lambda: chosen_by(1) == 20, 180, f"no period revisited the pages by push 1; see {log}")
            pushes[2] = push(tmp_path / "priorities", kafka_broker.url, topic, 2,
                             {u: round(1 - (i + 1) / 20, 2) for i, u in enumerate(pages[:20])})
            wait_until(lambda: chosen_by(2) >= 10, 120, f"push 2 chose no revisit; see {log}")
            assert (read_status(status_file) or {}).get("priorities_applied", 0) >= 40
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=40)

    # every landed snapshot agrees with the push that was in force when its page was chosen
    rows = landed()
    for r in rows:
        if r["chosen_by_model"] is None:  # a page no push scored, or one fetched before push 1 was applied
            assert (r["chosen_by_method"], r["chosen_score"]) == ("discovery_order", None)
            assert r["url"] in pages[20:] or r["period"] == min(x["period"] for x in rows), r
        else:
            assert (r["chosen_by_loop"], r["chosen_by_method"], r["chosen_by_model"]) == ("revisits", "NNL-ET_LBLA", MODEL)
            assert (r["chosen_score"], r["chosen_rank"]) == pushes[r["chosen_by_model_version"]][r["url"]], r

    # the documented query over the lake (the other loops' tables exist, empty here), as a person runs it
    others = (SOURCE_RECRAWLS, SOURCE_PAGES, STATS_TABLE, POSTS_TABLE)
    for spec in others:
        ensure_table(str(lake / spec.name), spec)
    database = f"lineage_{uuid.uuid4().hex[:8]}"
    register_tables(spark, dataclasses.replace(cfg, catalog_db=database),
                    {name: str(lake / name) for name in ("page_snapshots", *(spec.name for spec in others))})
    sample = [r.asDict() for r in spark.sql(documented_query(database)).collect()]
    assert len(sample) == 10 and all(r["loop"] == "revisits" for r in sample)
    by_model = [r for r in sample if r["chosen_by_model_version"] is not None]
    assert len(by_model) >= 5, sample  # most fetches were chosen by a push
    for r in by_model:
        assert (r["chosen_by_model"], r["chosen_by_method"]) == (MODEL, "NNL-ET_LBLA")
        assert (r["chosen_score"], r["chosen_rank"]) == pushes[r["chosen_by_model_version"]][r["item"]], r
    for r in sample:
        if r["chosen_by_model_version"] is None:
            assert r["chosen_by_method"] == "discovery_order" and r["chosen_score"] is None
    spark.sql(f"DROP DATABASE {database} CASCADE")
