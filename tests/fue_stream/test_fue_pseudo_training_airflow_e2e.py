"""Pseudo-training runs from Airflow on its schedule and re-orders a running chooser process (issue 4).

Seed ``000_c12b299f5bad9cdf.txt`` section V: every five minutes a new prediction classifier is
trained from the original set plus pseudo-labelled extracted users, the waiting candidates are
re-scored and the new scores reach the running User Chooser. Every engine is real: Delta tables
(``reddit_posts``, ``fue_extractions``), the ``fue_pseudo_training`` DAG run by Airflow's scheduler
(not triggered by hand), the compacted score topic on Kafka, and ``streaming/fue/chooser.py`` as
its own process, never restarted.

The chooser starts with a deliberately inverted candidate classifier (sports talk labelled as
the target), so it prefers the sports talkers; only the pushed scores (the DAG's model
is trained on the eRisk snippets) can put the user who writes about depression first.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from focuscrawl.services.process import wait_until
from focuscrawl.status import read_status

ROOT = Path(__file__).resolve().parents[2]
METHOD = "HCP-0.9-0.1"
DAG = "fue_pseudo_training"
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

SAD = "I feel so depressed and hopeless. I cry every night, I can't sleep and therapy is not helping me."
SPORTS = ("Great football match last weekend, what a goal", "Anyone tried this pizza recipe before the concert?")
SPORTS_WORDS = "football goal match weekend pizza recipe concert guitar".split()
SAD_WORDS = "depressed hopeless cry therapy sleep alone worthless tired".split()
CANDIDATES = {"sad_walrus_1": SAD, "lucky_otter_2": SPORTS[0], "jolly_panda_3": SPORTS[1]}


def _append(uri: str, spec, rows: list[dict]) -> None:
    from deltalake import write_deltalake

    from focuscrawl.delta_sink import ensure_table

    ensure_table(uri, spec)
    schema = spec.arrow_schema()
    write_deltalake(uri, pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema} for r in rows], schema=schema),
                    mode="append")


def _seed_tables(cfg) -> None:
    """What the crawl and the extractions of earlier minutes left: candidates' posts and judged users."""
    from focuscrawl.crawl.listing_crawler import POSTS_TABLE
    from focuscrawl.fue.pipeline import POSTS_TOPIC, STATS_TABLE

    lineage = {"kafka_topic": POSTS_TOPIC, "kafka_partition": 0}
    _append(POSTS_TABLE.path(cfg), POSTS_TABLE, [
        {"name": f"t3_e2e{i}", "id": f"e2e{i}", "kind": "t3", "author": user, "subreddit": "CasualConversation",
         "title": text, "selftext": "", "score": 3, "num_comments": 2, "created_utc": 1_700_000_000.0 + i,
         "kafka_offset": i, **lineage}
        for i, (user, text) in enumerate(CANDIDATES.items())])
    judged = [("blue_comet_7", SAD + " I feel worthless and alone.", 0.97),
              ("calm_maple_8", "Nobody would miss me, I am so tired of feeling empty.", 0.95),
              ("bold_rocket_9", "Fantasy football draft tonight, then a guitar lesson.", 0.03)]
    _append(STATS_TABLE.path(cfg), STATS_TABLE, [
        {"run_id": "e2e", "method": METHOD, "user": user, "sim_time": 60.0 * i, "sim_epoch": 1_700_000_000.0,
         "extraction_seconds": 0.1, "items": 5, "pages": 2, "probability": p, "relevant": p > 0.9,
         "history_text": text, "kafka_topic": "focuscrawl.fue.stats", "kafka_partition": 0, "kafka_offset": i}
        for i, (user, text, p) in enumerate(judged)])


def _unseed_tables(cfg) -> None:
    from deltalake import DeltaTable

    from focuscrawl.crawl.listing_crawler import POSTS_TABLE
    from focuscrawl.fue.pipeline import STATS_TABLE

    DeltaTable(POSTS_TABLE.path(cfg)).delete("name LIKE 't3_e2e%'")
    DeltaTable(STATS_TABLE.path(cfg)).delete("run_id = 'e2e'")


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _scheduled_runs(airflow) -> list[dict]:
    return [r for r in airflow.dag_runs(DAG) if r["run_type"] == "scheduled"]


def test_scheduled_pseudo_training_reorders_the_running_chooser(cfg, kafka_broker, airflow, tmp_path):
    from deltalake import DeltaTable
    from kafka import KafkaProducer

    from focuscrawl.fue import Post, UserClassifier
    from focuscrawl.fue.batch import CANDIDATE_SCORES_TABLE
    from focuscrawl.fue.pipeline import POSTS_TOPIC, STATS_TOPIC, post_to_json
    from focuscrawl.topics import TopicSpec, ensure_topics

    rng = random.Random(0)
    docs, labels = [], []
    for _ in range(40):
        for label, words in ((1, SPORTS_WORDS), (0, SAD_WORDS)):
            docs.append(" ".join(rng.sample(words, 3)))
            labels.append(label)
    inverted = UserClassifier(min_df=1, stop_words=None, C=10.0).fit(docs, labels)
    model = inverted.save(tmp_path / "inverted.joblib")
    _seed_tables(cfg)
    ensure_topics(cfg.kafka_bootstrap, [TopicSpec(POSTS_TOPIC, "author"), TopicSpec(STATS_TOPIC, "user")], 1, 1)

    status_file = tmp_path / "chooser.json"
    log = Path(cfg.var_dir) / "logs" / "fue-e2e-chooser.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    chooser = subprocess.Popen(
        [sys.executable, "streaming/fue/chooser.py", "--method", METHOD, "--classifier", str(model), "--lead", "1",
         "--status-file", str(status_file)],
        cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    producer = KafkaProducer(bootstrap_servers=cfg.kafka_bootstrap, acks="all")
    try:
        for i, (user, text) in enumerate(CANDIDATES.items()):
            post = Post(author=user, created_utc=1_700_000_000.0 + i, score=3, num_comments=2, title=text,
                        community="CasualConversation", post_id=f"t3_e2e{i}")
            producer.send(POSTS_TOPIC, key=user.encode(), value=post_to_json(post))
        producer.flush()

        # 1. The inverted model hands out a sports talker first and keeps the depressed user last.
        before = wait_until(lambda: (s := read_status(status_file)).get("chosen") == 1 and s.get("candidates") == 2 and s,
                            120, f"chooser did not take the posts; see {log}")
        first = before["in_flight"][0]
        assert first in ("lucky_otter_2", "jolly_panda_3")
        assert before["top"][-1][0] == "sad_walrus_1" and before["top"][-1][1] < before["top"][0][1]

        # 2. Airflow's scheduler (unpaused, not triggered) runs the DAG.
        airflow.wait_for_dag(DAG)
        airflow.unpause(DAG)
        run = wait_until(lambda: next(iter(_scheduled_runs(airflow)), None), 360, "no scheduled run was created", interval=2.0)
        state = airflow.wait(DAG, run["dag_run_id"], timeout=600)
        assert state == "success", airflow.task_log(DAG, run["dag_run_id"], "retrain")[-3000:]
        scores = DeltaTable(CANDIDATE_SCORES_TABLE.path(cfg)).to_pandas(filters=[("method", "=", METHOD)])
        scores = scores.set_index("user")["score"]
        assert set(scores.index) == set(CANDIDATES)  # judged users are no candidates
        assert scores["sad_walrus_1"] > max(scores["lucky_otter_2"], scores["jolly_panda_3"])

        # 3. The running chooser applied the pushed scores: the depressed user now leads ...
        after = wait_until(lambda: (s := read_status(status_file)).get("scores_applied", 0) >= 2 and s, 60,
                           f"the chooser never applied the pushed scores: {read_status(status_file)}")
        assert after["top"][0][0] == "sad_walrus_1"
        assert after["top"][0][1] == pytest.approx(scores["sad_walrus_1"])

        # ... and is the next user it hands out, once the extracted one's verdict frees the slot.
        verdict = {"method": METHOD, "user": first, "relevant": False}
        producer.send(STATS_TOPIC, key=first.encode(), value=json.dumps(verdict).encode())
        producer.flush()
        after = wait_until(lambda: (s := read_status(status_file)).get("chosen") == 2 and s, 60, "no second pick")
        assert after["in_flight"] == ["sad_walrus_1"]
        assert chooser.poll() is None, "the chooser was restarted or died"

        # 4. The scheduler's next run comes 5 (wall) minutes after this one (see the DAG doc for simulated time).
        # (the scheduler sets it once no run is active: max_active_runs=1)
        next_after = wait_until(lambda: airflow.dag(DAG)["next_dagrun_run_after"], 120,
                                "the scheduler planned no next run", interval=2.0)
        assert _when(next_after) - _when(run["run_after"]) == timedelta(minutes=5)
    finally:
        # The session's Airflow and lake are shared: stop the schedule and take the seeded rows back out.
        airflow.pause(DAG)
        _unseed_tables(cfg)
        producer.close()
        chooser.terminate()
        try:
            chooser.wait(timeout=30)
        except subprocess.TimeoutExpired:
            chooser.kill()
