"""The pseudo-training batch step over Delta tables (focuscrawl.fue.batch), with delta-rs on a temp folder."""

from __future__ import annotations

import pyarrow as pa
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


def _posts(tmp_path) -> str:
    uri = str(tmp_path / "reddit_posts")
    rows = [{"name": f"t3_{i}", "id": str(i), "kind": "t3", "author": a, "subreddit": "s", "title": t, "selftext": "",
             "score": 1, "num_comments": 0, "created_utc": 1.0 * i, "permalink": "", "listing_url": "",
             "fetched_at_ms": 0, "kafka_topic": "p", "kafka_partition": 0, "kafka_offset": i}
            for i, (a, t) in enumerate([("ann", "again"), ("odd", "zebra zebra"), ("sad", "hopeless numb"),
                                        ("sad", "crying")])]
    write_deltalake(uri, pa.Table.from_pylist(rows, schema=POSTS_TABLE.arrow_schema()))
    return uri


def test_extracted_users_and_candidates_come_from_the_tables(tmp_path):
    extracted, done = extracted_users(_stats(tmp_path), "HCP-POS")
    assert sorted(extracted) == [("football guitar", 0.05), ("zebra zebra crying", 0.97)] and done == {"ann", "bob"}
    candidates = dict(candidate_evidence(_posts(tmp_path), exclude=done))
    assert candidates == {"odd": "zebra zebra", "sad": "hopeless numb\ncrying"}
    assert extracted_users(str(tmp_path / "missing"), "HCP") == ([], set())


def test_pseudo_training_run_rescores_and_the_scores_round_trip(tmp_path, toy_classifier):
    docs = [f"{OTHER[i % 8]} {OTHER[(i + 1) % 8]}" for i in range(20)] + [f"{TARGET[i % 8]} crying" for i in range(20)]
    train = (docs, [0] * 20 + [1] * 20)
    candidates = [("odd", "zebra zebra"), ("sad", "hopeless numb"), ("meh", "recipe garden")]
    extracted = [("zebra zebra crying", 0.97)] * 10 + [("football guitar", 0.05)]
    model, scores = pseudo_training_run("HCP-POS", train, extracted, candidates, toy_classifier, top_n=2)
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
    cache (keyed by the documents), and the run's model and scores are those of an uncached run."""
    import numpy as np

    from focuscrawl.fue.batch import analysed

    docs = [f"{OTHER[i % 8]} {OTHER[(i + 1) % 8]}" for i in range(20)] + [f"{TARGET[i % 8]} crying" for i in range(20)]
    train = (docs, [0] * 20 + [1] * 20)
    first = analysed(docs, "english", tmp_path)
    (cached,) = (tmp_path / "fue").glob("analysed-*.joblib")
    again = analysed(docs, "english", tmp_path)
    assert again is not first and again.terms() == first.terms()
    assert (again.matrix() != first.matrix()).nnz == 0
    analysed(docs[:-1] + ["another text"], "english", tmp_path)
    assert len(list((tmp_path / "fue").glob("analysed-*.joblib"))) == 2  # other documents, another entry
    candidates = [("odd", "zebra zebra"), ("sad", "hopeless numb"), ("meh", "recipe garden")]
    extracted = [("zebra zebra crying", 0.97)] * 10 + [("football guitar", 0.05)]
    plain = pseudo_training_run("HCP-POS", train, extracted, candidates, toy_classifier, top_n=3)
    for _ in range(2):  # the cache written, then read
        model, scores = pseudo_training_run("HCP-POS", train, extracted, candidates, toy_classifier, top_n=3,
                                            cache_dir=tmp_path)
        assert [u for u, _ in scores] == [u for u, _ in plain[1]]
        np.testing.assert_allclose([s for _, s in scores], [s for _, s in plain[1]], atol=1e-12)
        np.testing.assert_allclose(model.model_.coef_, plain[0].model_.coef_, atol=1e-12)
    assert cached.exists()
