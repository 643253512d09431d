"""Seed 002 end to end, every engine real (issue 5, acceptance 1).

A small generated world (clock paused, moved a week at a time by the test) -> the revisitor process
(fetch layer, the site's clock from its Date header) snapshots its pages weekly into Delta -> the outlinks_features DAG run in
real Airflow (GX gate, spark-submit embed, related pages, LBLA features) -> its feature table's Asset
triggers outlinks_train (train, register, promote, score, push to the compacted topic) -> the running
revisitor, never restarted, puts the top-scored page first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from focuscrawl.services.process import wait_until
from focuscrawl.status import read_status

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]
PAGES, WEEKS = 60, 7  # history size 4: features from week 5, one week to train on, one held out


def _fresh_outlinks_state(cfg) -> None:
    """No table or champion model of an earlier run in this state folder may decide the outcome."""
    from focuscrawl.outlinks import tables

    for spec in (tables.SNAPSHOTS, tables.EMBEDDINGS, tables.RELATED_PAGES, tables.FEATURES, tables.MODELS,
                 tables.PAGE_PRIORITIES):
        shutil.rmtree(spec.path(cfg), ignore_errors=True)
    shutil.rmtree(Path(cfg.var_dir) / "models" / "outlinks", ignore_errors=True)


def test_revisits_to_dag_to_scores_and_the_running_revisitor_reorders(cfg, kafka_broker, airflow, tmp_path):
    from deltalake import DeltaTable

    from focuscrawl.outlinks.revisit import WEEK
    from focuscrawl.outlinks.tables import MODELS, PAGE_PRIORITIES, SNAPSHOTS
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    _fresh_outlinks_state(cfg)
    world = build_world(11, data_dir=None, users=200, paused=True, rate_limit=0, events_per_minute=0.01)
    status_file = tmp_path / "revisitor.json"
    log = Path(cfg.var_dir) / "logs" / "e2e-revisitor.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with WorldServer(world, cfg.bind_host, 0, 0) as server:
        env = {**os.environ, "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": server.url.removeprefix("http://")}
        revisitor = subprocess.Popen(
            [sys.executable, "streaming/revisitor.py", "--seed", server.url + world.web.page_path(0),
             "--discover", "/site/[^/]+/wiki/", "--max-pages", str(PAGES), "--clock", "site",
             "--origin", str(world.clock.start_epoch), "--clock-refresh", "1", "--politeness-delay", "0", "--idle", "0.2",
             "--status-file", str(status_file)],
            cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
        try:
            # 1. Weekly revisits on the world's clock: every known page once per week, in Delta.
            for week in range(WEEKS):
                if week:
                    world.clock.advance(WEEK)
                wait_until(lambda: (s := read_status(status_file)).get("period") == week and s["due"] == 0
                           and s["written"] == PAGES * (week + 1), 180, f"week {week} not revisited; see {log}")
            before = read_status(status_file)
            assert (before["known"], before["failures"], before["next_pick_score"]) == (PAGES, 0, -1.0)

            # 2. Real Airflow: the features DAG, whose feature table triggers the training DAG.
            for dag in ("outlinks_features", "outlinks_train"):
                airflow.wait_for_dag(dag)
                airflow.unpause(dag)
            run_id = airflow.trigger("outlinks_features", {"dimensions": 16, "k": 10})
            state = airflow.wait("outlinks_features", run_id, timeout=900)
            assert state == "success", airflow.task_states("outlinks_features", run_id)
            runs = wait_until(lambda: airflow.dag_runs("outlinks_train"),
                              120, "the feature table's Asset did not trigger outlinks_train")
            train_run = runs[0]["dag_run_id"]
            assert runs[0]["run_type"] == "asset_triggered"
            state = airflow.wait("outlinks_train", train_run, timeout=900)
            assert state == "success", (airflow.task_states("outlinks_train", train_run),
                                        airflow.task_log("outlinks_train", train_run, "train")[-3000:])

            # 3. Models registered with their data version; every page scored for the next week.
            models = DeltaTable(MODELS.path(cfg)).to_pandas()
            assert sorted(models["name"]) == ["NNL-ET_LBLA/ext", "NNL-ET_LBLA/int", "NNL-NGB/ext", "NNL-NGB/int"]
            assert set(models["eval_period"]) == {WEEKS - 1} and models["version"].eq(1).all()
            priorities = DeltaTable(PAGE_PRIORITIES.path(cfg)).to_pandas()
            assert len(priorities) == PAGES and set(priorities["period"]) == {WEEKS}
            top = set(priorities.loc[priorities["score"] == priorities["score"].max(), "url"])

            # 4. The running revisitor follows the pushed scores: the best page is revisited first.
            after = wait_until(lambda: (s := read_status(status_file)).get("priorities_applied", 0) >= PAGES and s, 120,
                               "the revisitor never applied the pushed scores")
            assert after["next_pick_score"] == priorities["score"].max() and after["next_pick"] in top
            assert [score for _, score in after["order"]] == sorted((score for _, score in after["order"]),
                                                                     reverse=True)
            # The next week's revisits, in the order they were made, go best score first.
            world.clock.advance(WEEK)
            wait_until(lambda: read_status(status_file).get("written") == PAGES * (WEEKS + 1), 180,
                       f"week {WEEKS} not revisited; see {log}")
            week = DeltaTable(SNAPSHOTS.path(cfg)).to_pandas(filters=[("period", "=", WEEKS)])
            score = priorities.set_index("url")["score"]
            assert week["url"].iloc[0] in top
            assert score[week["url"]].is_monotonic_decreasing
            assert revisitor.poll() is None, "the revisitor was restarted or died"
        finally:
            revisitor.terminate()
            try:
                revisitor.wait(timeout=30)
            except subprocess.TimeoutExpired:
                revisitor.kill()
