"""The pseudo-training batch step over Delta tables (focuscrawl.fue.batch), with delta-rs on a temp folder, and the
original training set it starts from: the active project's example users (focuscrawl.fue.examples)."""

from __future__ import annotations

import json
import random
from functools import partial
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from focuscrawl.testing import OTHER_WORDS as OTHER, TARGET_WORDS as TARGET
from focuscrawl.lake.delta_sink import DeltaSink, StreamRecord
from focuscrawl.fue.batch import candidate_evidence, extracted_users, pseudo_training_run, read_scores, scores_push, write_scores
from focuscrawl.fue.pipeline import STATS_TABLE, StatsEvent
from focuscrawl.crawl.listing_crawler import POSTS_TABLE


def _stats(tmp_path) -> str:
    uri = str(tmp_path / "fue_extractions")
    sink = DeltaSink(uri, STATS_TABLE, "g", dead_letter_uri=str(tmp_path / "dead"))
    events = [StatsEvent("r", "HCP-POS", "ann", 60, 0, 0.1, 3, 2, 0.97, True, "zebra zebra crying"),
              StatsEvent("r", "HCP-POS", "bob", 60, 0, 0.1, 3, 2, 0.05, False, "football guitar"),
              StatsEvent("r", "RND", "cid", 60, 0, 0.1, 3, 2, 0.5, False, "x")]
    sink.write([StreamRecord("stats", 0, i, e.to_json(), e.user.encode()) for i, e in enumerate(events)])
    return uri


POSTS = [("ann", "again"), ("odd", "zebra zebra"), ("sad", "hopeless numb"), ("sad", "crying")]


def _posts(tmp_path, posts: list[tuple[str, str]] = POSTS) -> str:
    """A ``reddit_posts`` table of ``(author, title)`` posts."""
    uri = str(tmp_path / "reddit_posts")
    rows = [{"name": f"t3_{i}", "id": str(i), "kind": "t3", "author": a, "subreddit": "s", "title": t, "selftext": "",
             "score": 1, "num_comments": 0, "created_utc": 1.0 * i, "permalink": "", "listing_url": "",
             "fetched_at_ms": 0, "kafka_topic": "p", "kafka_partition": 0, "kafka_offset": i}
            for i, (a, t) in enumerate(posts)]
    write_deltalake(uri, pa.Table.from_pylist(rows, schema=POSTS_TABLE.arrow_schema()))
    return uri


def example_users_project(folder: Path, documents: list[str], labels: list[int], name: str = "t"):
    """A project whose example users are ``documents`` (one writing each), positive where ``labels`` is 1."""
    from focuscrawl.project.loading import load_project

    for role, label in (("pos", 1), ("neg", 0)):
        (folder / f"{role}.jsonl").write_text("".join(json.dumps({"user": f"{role}{i}", "text": d}) + "\n"
                                                      for i, (d, lb) in enumerate(zip(documents, labels)) if lb == label))
    (folder / "focuscrawl.toml").write_text(
        f'name = "{name}"\ntarget = "sites"\n\n[profile]\npositives = "pos.jsonl"\nnegatives = "neg.jsonl"\n\n'
        '[[sites]]\nname = "s"\nbase_url = "https://s.example.org"\n'
        'user_agent = "focuscrawl-test/1 (+mailto:ops@example.org)"\n')
    return load_project(folder / "focuscrawl.toml")


def make_active(cfg, folder: Path, name: str = "t") -> None:
    """What `focuscrawl up folder/focuscrawl.toml` writes: the active project and its file."""
    from focuscrawl.core.status_file import write_status
    from focuscrawl.orchestration.schedules import ACTIVE_PROJECT
    from focuscrawl.project.loading import load_project

    project = load_project(folder / "focuscrawl.toml")
    assert project.name == name
    write_status(Path(cfg.var_dir) / ACTIVE_PROJECT, {**project.to_json(), "project_file": str(folder / "focuscrawl.toml")})


def test_extracted_users_and_candidates_come_from_the_tables(tmp_path):
    extracted, done = extracted_users(_stats(tmp_path), "HCP-POS")
    assert sorted(extracted) == [("football guitar", 0.05), ("zebra zebra crying", 0.97)] and done == {"ann", "bob"}
    candidates = dict(candidate_evidence(_posts(tmp_path), exclude=done))
    assert candidates == {"odd": "zebra zebra", "sad": "hopeless numb\ncrying"}
    assert extracted_users(str(tmp_path / "missing"), "HCP") == ([], set())


class Examples:
    """What :func:`focuscrawl.fue.batch.analysed` reads of an example set: its digest and its whole-user documents."""

    def __init__(self, documents, labels, digest="d1"):
        self.documents, self.labels, self.digest, self.read = documents, labels, digest, 0

    def whole_users(self):
        self.read += 1
        return self.documents, self.labels

    def analysed(self):
        from focuscrawl.fue.classifier import TermCounts

        counts = TermCounts(stop_words="english")
        counts.add(self.documents)
        return counts


def test_pseudo_training_run_rescores_and_the_scores_round_trip(tmp_path, toy_classifier):
    docs = [f"{OTHER[i % 8]} {OTHER[(i + 1) % 8]}" for i in range(20)] + [f"{TARGET[i % 8]} crying" for i in range(20)]
    train = (docs, [0] * 20 + [1] * 20)
    candidates = [("odd", "zebra zebra"), ("sad", "hopeless numb"), ("meh", "recipe garden")]
    extracted = [("zebra zebra crying", 0.97)] * 10 + [("football guitar", 0.05)]
    model, scores = pseudo_training_run("HCP-POS", Examples(*train).analysed(), train[1], extracted, candidates,
                                        toy_classifier, top_n=2)
    assert [u for u, _ in scores] and {u for u, _ in scores} == {"sad", "odd"}  # the 2 best by the old model
    # The pseudo-positive word now counts: the same fit without the pseudo-examples knows no "zebra".
    from focuscrawl.fue.classifier import UserClassifier, reference_params

    without = UserClassifier(**reference_params(len(docs))).fit(*train)
    assert dict(scores)["odd"] > without.proba("zebra zebra") + 0.1
    uri = str(tmp_path / "scores")
    assert write_scores(uri, "HCP-POS", scores, 11) == 2
    write_scores(uri, "HCP-0.5-0.5", [("x", 0.5)], 1)
    write_scores(uri, "HCP-POS", scores[:1], 11)  # replaces only its own partition
    assert read_scores(uri, "HCP-POS") == scores[:1] and read_scores(uri, "HCP-0.5-0.5") == [("x", 0.5)]
    # the push names the refreshed classifier and the table version its scores are read at
    assert scores_push(uri, "HCP-0.5-0.5") == [("x", 0.5, {"method": "HCP-0.5-0.5", "model_version": DeltaTable(
        uri).version(), "model": "candidate-classifier/HCP-0.5-0.5"})]


def test_the_originals_are_analysed_once_and_a_cached_run_scores_as_a_fresh_one(tmp_path, toy_classifier):
    """Every fue_pseudo_training run starts from the same original set: its analysis is read back from the
    cache (keyed by the set's digest, so the users' writings are not read at all), and the run's model and scores
    are those of an uncached run."""
    import numpy as np

    from focuscrawl.fue.batch import analysed

    docs = [f"{OTHER[i % 8]} {OTHER[(i + 1) % 8]}" for i in range(20)] + [f"{TARGET[i % 8]} crying" for i in range(20)]
    examples = Examples(docs, [0] * 20 + [1] * 20)
    first, labels = analysed(examples, "english", tmp_path)
    (cached,) = (tmp_path / "fue").glob("analysed-*.joblib")
    again, again_labels = analysed(examples, "english", tmp_path)
    assert examples.read == 1 and again_labels == labels == examples.labels  # the second from the cache alone
    assert again is not first and again.terms() == first.terms()
    assert (again.matrix() != first.matrix()).nnz == 0
    other = Examples(docs[:-1] + ["another text"], examples.labels, digest="d2")
    analysed(other, "english", tmp_path)
    assert other.read == 1 and len(list((tmp_path / "fue").glob("analysed-*.joblib"))) == 2  # another set, entry
    analysed(examples, None, tmp_path)
    assert examples.read == 2  # other stop words: another analysis
    candidates = [("odd", "zebra zebra"), ("sad", "hopeless numb"), ("meh", "recipe garden")]
    extracted = [("zebra zebra crying", 0.97)] * 10 + [("football guitar", 0.05)]
    plain = pseudo_training_run("HCP-POS", examples.analysed(), examples.labels, extracted, candidates,
                                toy_classifier, top_n=3)
    for _ in range(2):  # from the cache, twice
        model, scores = pseudo_training_run("HCP-POS", *analysed(examples, "english", tmp_path), extracted,
                                            candidates, toy_classifier, top_n=3)
        assert [u for u, _ in scores] == [u for u, _ in plain[1]]
        np.testing.assert_allclose([s for _, s in scores], [s for _, s in plain[1]], atol=1e-12)
        np.testing.assert_allclose(model.model_.coef_, plain[0].model_.coef_, atol=1e-12)
    assert cached.exists() and examples.read == 2


def test_a_refresh_learns_the_active_projects_examples_and_follows_examples_add(tmp_path, monkeypatch):
    """Seed 000 section V's "original training set" is the project's example set, the one its reference classifier
    was fitted on, never the world corpus: the refresh's originals are the project's users, a word only its
    positives use raises the score of a candidate who uses it, the stored version names the set as `focuscrawl
    train` does, and held_out measures on the same set. `examples add` changes the set (its digest and the
    fue_example_users version) for the next refresh and held_out; an edited example file is read again."""
    from focuscrawl.config import settings
    from focuscrawl.fue.batch import CANDIDATE_SCORES_TABLE, held_out, model_store, refresh
    from focuscrawl.fue.examples import EXAMPLE_USERS, added_users
    from focuscrawl.orchestration.schedules import active_example_set
    from focuscrawl.platform.examples import add_examples
    from focuscrawl.platform.train import train_models
    from tests.fue_stream.test_examples_add import users_file

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    monkeypatch.setattr("focuscrawl.control.send", lambda bootstrap, given, **kw: len(given))  # no broker here
    monkeypatch.setattr("focuscrawl.core.corpora.load_corpus", lambda *a, **k: pytest.fail("the corpus was read"))
    cfg, rng = settings(), random.Random(3)
    # the project's focus is "quokka", not the world corpus's (the TARGET words of depression)
    documents = ([" ".join(rng.choices(OTHER, k=8)) + " quokka" for _ in range(15)]
                 + [" ".join(rng.choices(OTHER, k=8)) for _ in range(15)])
    project = example_users_project(tmp_path, documents, [1] * 15 + [0] * 15)
    make_active(cfg, tmp_path)
    train_models(project, cfg, log=lambda _: None)  # what `up` fits first
    stats = _stats(Path(STATS_TABLE.path(cfg)).parent)  # where held_out reads the extractions
    posts = _posts(tmp_path, [("fan", "quokka guitar"), ("plain", "guitar")])
    examples = active_example_set(cfg)

    analyses = sorted((Path(cfg.var_dir) / "fue").glob("analysed-*.joblib"))
    assert len(analyses) == 1  # `up`'s training analysed the set where every refresh reads it
    assert refresh(cfg, "HCP-POS", 10, posts, examples, stats)["model"] == "v1 trained"
    assert sorted((Path(cfg.var_dir) / "fue").glob("analysed-*.joblib")) == analyses  # read, not made again
    store = model_store(cfg)
    v1, reference = store.champion("pseudo/HCP-POS"), store.champion("t/reference")
    assert (v1.params["originals"], v1.params["examples.added"]) == (30, 0)
    assert v1.params["examples.digest"] == reference.params["examples.digest"] == examples.digest
    scores = dict(read_scores(CANDIDATE_SCORES_TABLE.path(cfg), "HCP-POS"))
    assert scores["fan"] > 0.9 > 0.1 > scores["plain"]  # "quokka": the project's positives' own word

    measured: list[tuple[list[int], int]] = []
    monkeypatch.setattr("focuscrawl.fue.evaluation.pseudo_cross_validated",
                        lambda counts, labels, rows, labelling: measured.append((list(labels), len(rows))) or {"x": 1})
    assert held_out(cfg, v1, partial(active_example_set, cfg)) == {"x": 1}
    assert measured == [([1] * 15 + [0] * 15, 2)]  # the project's users, and the two HCP-POS extracted

    add_examples(project, cfg, users_file(tmp_path / "more.jsonl", "new", TARGET, users=3, seed=2), "positive",
                 log=lambda _: None)
    changed = active_example_set(cfg)
    assert len(changed.users[1]) == 33 and changed.digest != examples.digest
    assert changed.digest == store.champion("t/reference").params["examples.digest"]
    with pytest.raises(ValueError, match="was trained on example set .* the project's is now .* measured on the new"):
        held_out(cfg, v1, partial(active_example_set, cfg))  # not against another set than it was trained on
    assert refresh(cfg, "HCP-POS", 10, posts, changed, stats)["model"] == "v2 trained"
    v2 = store.champion("pseudo/HCP-POS")
    assert (v2.params["originals"], v2.params["examples.added"], v2.params["examples.digest"]) == (33, 3, changed.digest)
    assert v2.delta_versions[EXAMPLE_USERS.name] == added_users(cfg, "t").delta_version
    measured.clear()
    held_out(cfg, v2, partial(active_example_set, cfg))
    assert measured == [([1] * 15 + [0] * 15 + [1] * 3, 2)]

    cached = set((Path(cfg.var_dir) / "fue").glob("example-users-*.joblib"))
    with (tmp_path / "neg.jsonl").open("a") as f:  # an edited example file: another cache entry, never the old one
        f.write(json.dumps({"user": "neg-new", "text": "garden concert"}) + "\n")
    assert len(active_example_set(cfg).users[1]) == 34
    assert len(set((Path(cfg.var_dir) / "fue").glob("example-users-*.joblib")) - cached) == 1


def test_without_an_active_project_pseudo_training_says_to_start_one(tmp_path, monkeypatch):
    from focuscrawl.config import settings
    from focuscrawl.orchestration.schedules import active_example_set

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    with pytest.raises(LookupError, match=r"no project is active .* `focuscrawl up PROJECT`"):
        active_example_set(settings())


def test_a_run_refreshes_and_publishes_each_method_in_turn_and_one_failure_stops_none_of_the_others(monkeypatch):
    """fue_pseudo_training's one task: each method's scores are pushed right after its refresh wrote them, to its own
    topic; a method that fails is named in the run's error after the others were refreshed and pushed."""
    from types import SimpleNamespace

    from focuscrawl.fue import batch

    steps: list[tuple] = []

    def refresh(cfg, method, top_n, posts_uri, examples):
        steps.append(("refresh", method, top_n))
        if method == "HCP-0.5-0.5":
            raise OSError("the disk is full")
        return {"method": method}

    monkeypatch.setattr(batch, "refresh", refresh)
    monkeypatch.setattr(batch, "scores_push", lambda uri, method: [(f"{method}-user", 0.5, {})])
    monkeypatch.setattr("focuscrawl.topics.priority.publish",
                        lambda bootstrap, topic, push: steps.append(("publish", topic, bootstrap)) or len(push))
    cfg = SimpleNamespace(kafka_bootstrap="broker:9092", table_path=lambda name: f"/lake/{name}")
    with pytest.raises(RuntimeError, match=r"1 of 3 methods failed \(HCP-0.5-0.5: OSError: the disk is full\); "
                                           r"the others' scores were pushed: \['HCP-0.9-0.1', 'HCP-POS'\]"):
        batch.refresh_and_publish(cfg, ["HCP-0.9-0.1", "HCP-0.5-0.5", "HCP-POS"], 7, "posts", examples=None)
    assert steps == [("refresh", "HCP-0.9-0.1", 7), ("publish", "focuscrawl.fue.scores.HCP-0.9-0.1", "broker:9092"),
                     ("refresh", "HCP-0.5-0.5", 7),
                     ("refresh", "HCP-POS", 7), ("publish", "focuscrawl.fue.scores.HCP-POS", "broker:9092")]
    monkeypatch.setattr(batch, "refresh", lambda cfg, method, *a: {"method": method})
    assert batch.refresh_and_publish(cfg, ["HCP-POS"], 7, "posts", None) == [{"method": "HCP-POS", "published": 1}]
