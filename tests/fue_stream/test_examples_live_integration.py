"""`focuscrawl examples add` over the real engines: a running FUE classifier process (following the reference) and a
running HCP-SNIP chooser (following the candidate), started as the plan starts them, take the refitted classifiers
from the control topic of the session's Kafka without a restart, the chooser rescoring the candidates it holds; the
model registry's mirror (the ``model_registry`` DAG's) then lists two versions of both classifiers in the real
MLflow, each with its cross-validated metrics, and the second with the Delta version of ``fue_example_users`` it
read."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from focuscrawl.core.status_file import read_status
from focuscrawl.services.process import wait_until
from focuscrawl.testing import TARGET_WORDS as TARGET
from tests.fue_stream.test_examples_add import example_project, users_file

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def spawn(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=os.environ.copy(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen, log: Path) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(40) == 0, log.read_text()[-3000:]


def test_the_running_processes_take_the_refitted_classifiers_and_the_registry_lists_both_versions(
        cfg, kafka_broker, mlflow_server, tmp_path):
    from kafka import KafkaProducer

    from focuscrawl.fue import RANKING_METHODS, UserChooser, UserClassifier
    from focuscrawl.fue.batch import model_store
    from focuscrawl.fue.evidence import Post
    from focuscrawl.orchestration.model_families import family, mirror
    from focuscrawl.fue.examples import EXAMPLE_USERS, added_users
    from focuscrawl.platform.examples import add_examples
    from focuscrawl.platform.train import model_paths, train_models
    from focuscrawl.services.model_registry import CHAMPION, ModelRegistry
    from focuscrawl.topics.specs import TopicSpec, ensure_topics

    name = f"ex{uuid.uuid4().hex[:8]}"  # the session's state folder and topics: a project of the test's own
    project = example_project(tmp_path, name)
    train_models(project, cfg, log=lambda _: None)  # what `up` fits before it starts the processes
    models, topics = model_paths(project, cfg), {t: f"{t}-{name}" for t in ("posts", "stats", "scores", "extract")}
    ensure_topics(kafka_broker.url, [TopicSpec(t, "user") for t in topics.values()])
    producer = KafkaProducer(bootstrap_servers=kafka_broker.url, acks="all")
    posts = [Post(user, 1.7e9, text=text, post_id=f"t3_{user}") for user, text in (
        ("sad", "hopeless numb crying lonely"), ("fan", "football guitar weekend"), ("mix", "therapy garden concert"))]
    for post in posts:
        producer.send(topics["posts"], key=post.author.encode(), value=json.dumps(dataclasses.asdict(post)).encode())
    producer.flush(30)
    producer.close()

    logs, status = {p: tmp_path / f"{p}.log" for p in ("classifier", "chooser")}, {}
    common = ["--bootstrap", kafka_broker.url]
    procs = {
        "classifier": spawn(["streaming/fue/classifier.py", "--reference", str(models.reference), "--model",
                             f"{name}/reference", "--run-id", name, "--status-file", str(tmp_path / "classifier.json"),
                             *common], logs["classifier"]),
        "chooser": spawn(["streaming/fue/chooser.py", "--method", "HCP-SNIP", "--classifier", str(models.candidate),
                          "--model", f"{name}/candidate", "--lead", "0", "--group", f"chooser-{name}",
                          "--posts-topic", topics["posts"], "--stats-topic", topics["stats"], "--scores-topic",
                          topics["scores"], "--extract-topic", topics["extract"],
                          "--status-file", str(tmp_path / "chooser.json"), *common], logs["chooser"])}
    try:
        for proc in procs:
            status[proc] = lambda proc=proc: read_status(tmp_path / f"{proc}.json") or {}
        wait_until(lambda: status["chooser"]().get("candidates") == 3
                   and status["classifier"]().get("classifier", {}).get("version") == 1, 90,
                   f"the processes did not start with v1 and the three candidates; see {logs}")
        pids = {proc: status[proc]()["pid"] for proc in procs}

        done = add_examples(project, cfg, users_file(tmp_path / "more.jsonl", "new", TARGET, users=3, seed=5),
                            "positive", by="test", log=lambda _: None)
        assert done["versions"] == {"reference": 2, "candidate": 2}
        added = time.monotonic()
        wait_until(lambda: all(status[p]().get("classifier", {}).get("version") == 2 for p in procs), 30,
                   f"the running processes did not take v2; see {logs}")
        took = time.monotonic() - added
        assert {proc: status[proc]()["pid"] for proc in procs} == pids  # no restart
        assert status["chooser"]()["rescored"] == 3
        fresh = UserChooser(RANKING_METHODS.create("HCP-SNIP", classifier=UserClassifier.load(models.candidate)))
        fresh.add_posts(posts)
        wanted = dict(fresh.top(3))
        # the chooser's scores are the new candidate's, as a chooser started with it gives (its status writes a
        # second after the swap)
        wait_until(lambda: {u: round(s, 6) for u, s in status["chooser"]()["top"]}
                   == {u: round(s, 6) for u, s in wanted.items()}, 10, f"the chooser kept old scores; see {logs}")
    finally:
        for proc, popen in procs.items():
            stop(popen, logs[proc])
    assert took < 10, f"the processes took {took:.1f} s to follow the control topic"

    registry = ModelRegistry.from_settings(cfg)
    fue = dataclasses.replace(family(cfg, "fue"), keys=(f"{name}/reference", f"{name}/candidate"))
    mirror(fue, registry)
    delta_version = added_users(cfg, name).delta_version
    for role in ("reference", "candidate"):
        listed = [v for v in registry.versions() if v.name == f"fue.{name}.{role}"]
        assert [v.version for v in listed] == [1, 2]
        assert all({"cv_auc", "cv_folds"} <= set(v.metrics) for v in listed)
        assert [v.delta_versions for v in listed] == [{}, {EXAMPLE_USERS.name: delta_version}]
        assert CHAMPION in listed[1].aliases
        assert model_store(cfg).champion(f"{name}/{role}").registry_version == 2
