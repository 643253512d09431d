"""The seed-002 Spark jobs end to end on a tiny synthetic lake (real Spark, Delta)."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pyarrow as pa
import pytest

from focuscrawl.outlinks.features import build_features
from focuscrawl.outlinks.synthetic import generate_snapshots
from focuscrawl.outlinks.tables import SNAPSHOTS
from focuscrawl.outlinks.targets import targets

pytestmark = pytest.mark.integration


def job(cfg, name):
    spec = importlib.util.spec_from_file_location(name, cfg.home / "spark_jobs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def lake_cfg(cfg, tmp_path_factory):
    from deltalake import write_deltalake

    root = tmp_path_factory.mktemp("outlinks")
    local = dataclasses.replace(cfg, lake=str(root / "lake"), var_dir=root)
    snapshots = generate_snapshots(n_pages=80, n_periods=6, n_topics=6, n_sites=6, words_per_page=40, seed=5)
    write_deltalake(SNAPSHOTS.path(local), pa.Table.from_pandas(snapshots, schema=SNAPSHOTS.arrow_schema(),
                                                                 preserve_index=False), partition_by=["period"])
    return local, snapshots


def test_jobs_chain_snapshots_to_priorities(spark, lake_cfg):
    cfg, snapshots = lake_cfg
    from focuscrawl import lake
    from focuscrawl.outlinks.tables import EMBEDDINGS, FEATURES, MODELS, PAGE_PRIORITIES, RELATED_PAGES

    assert job(cfg, "outlinks_embed").run(spark, cfg, dimensions=16) == 80
    vectors = lake.to_pandas(EMBEDDINGS, cfg)
    assert np.allclose([np.linalg.norm(v) for v in vectors["vector"]], 1.0, atol=1e-5)
    assert set(vectors["as_of_period"]) == {4}  # before the held-out period 5

    assert job(cfg, "outlinks_related").run(spark, cfg, k=5) == 80 * 5
    related = lake.to_pandas(RELATED_PAGES, cfg).sort_values(["url", "rank"])
    assert (related["url"] != related["neighbour"]).all()
    assert (related.groupby("url")["similarity"].apply(lambda s: s.is_monotonic_decreasing)).all()

    n = job(cfg, "outlinks_features").run(spark, cfg, history_size=2)
    got = lake.to_pandas(FEATURES, cfg).sort_values(["period", "url"], ignore_index=True)
    # The distributed features equal the pandas reference computed from the same related pages.
    want = build_features(snapshots, targets(snapshots), related, history_size=2)
    assert n == len(want) == 80 * 4  # intervals 3, 4, 5 observed + next period 6
    for col in ["nnl_int", "nnl_ext_lag2", "lcr_ext", "ccr", "n_words", "around_max_nnl_int_av",
                "around_mean_similarity"]:
        assert np.allclose(got[col].to_numpy(float), want[col].to_numpy(float), equal_nan=True), col

    rows = job(cfg, "outlinks_train").run(cfg, ["NNL-ET_LBLA"], history_size=2, n_estimators=20)
    assert [(r["name"], r["version"], r["promoted"]) for r in rows] == [("NNL-ET_LBLA/int", 1, True),
                                                                          ("NNL-ET_LBLA/ext", 1, True)]
    models = lake.to_pandas(MODELS, cfg)
    assert set(models["data_version"]) == {lake.version(FEATURES, cfg)} and set(models["eval_period"]) == {5}

    assert job(cfg, "outlinks_score").run(spark, cfg, "NNL-ET_LBLA", "int") == 80
    priorities = lake.to_pandas(PAGE_PRIORITIES, cfg)
    assert set(priorities["period"]) == {6} and priorities["score"].between(0, 1).all()
    assert priorities["score"].max() == 1.0
    # On a small lake a DAG task writes the same rows with delta-rs (focuscrawl.lake.spark.in_process).
    assert job(cfg, "outlinks_score").run(None, cfg, "NNL-ET_LBLA", "int") == 80
    again = lake.to_pandas(PAGE_PRIORITIES, cfg)
    assert again.sort_values("url", ignore_index=True).equals(priorities.sort_values("url", ignore_index=True))


def test_chain_runs_its_jobs_in_order_in_one_driver(spark, lake_cfg, monkeypatch, capsys):
    from focuscrawl import lake
    from focuscrawl.outlinks.tables import EMBEDDINGS, RELATED_PAGES

    cfg, _ = lake_cfg
    chain = job(cfg, "chain")
    monkeypatch.setenv("FOCUSCRAWL_LAKE", cfg.lake)  # each job reads settings() as under spark-submit
    before = lake.version(RELATED_PAGES, cfg)
    assert chain.main(["outlinks_embed.py", "--dimensions", "8", "--", "outlinks_related.py", "--k", "3"]) == 0
    printed = capsys.readouterr().out
    assert printed.index("outlinks_embed: 80 pages") < printed.index("outlinks_related: 240 pairs")
    assert len(lake.to_pandas(EMBEDDINGS, cfg)["vector"][0]) == 8 and lake.version(RELATED_PAGES, cfg) == before + 1
    # The session was the one already running: no second driver.
    assert spark.sparkContext.appName == "focuscrawl-tests"


def test_chain_names_a_step_it_cannot_run(lake_cfg):
    chain = job(lake_cfg[0], "chain")
    for argv, says in [([], "no step"), (["outlinks_embed.py", "--", "--", "x.py"], "empty step"),
                       (["outlinks_embd.py"], "'outlinks_embd.py' is not a job"), (["chain.py"], "not a job")]:
        with pytest.raises(SystemExit) as err:
            chain.steps(argv)
        assert says in str(err.value)
    assert chain.steps(["outlinks_embed.py", "--dimensions", "8", "--", "near_duplicates.py"]) == [
        ("outlinks_embed.py", ["--dimensions", "8"]), ("near_duplicates.py", [])]


def test_held_out_period_never_reaches_training_or_model_selection(spark, lake_cfg, tmp_path):
    """Leakage guard (issue 29, item 1): the Spark jobs' features and training set for the held-out period
    must not depend on any text, vector or neighbour list of that period or later. Builds embed -> related
    -> features twice, once with the held-out period's texts replaced by unrelated ones, and requires the
    same embeddings and the same train and test rows (the ones ``train_and_register`` fits and selects on)."""
    import pandas as pd

    from focuscrawl import lake
    from focuscrawl.outlinks.tables import EMBEDDINGS, FEATURES, RELATED_PAGES
    from focuscrawl.outlinks.training import held_out_split
    from deltalake import write_deltalake

    cfg, snapshots = lake_cfg
    held_out = int(snapshots["period"].max())

    def build(snaps, name):
        root = tmp_path / name
        local = dataclasses.replace(cfg, lake=str(root / "lake"), var_dir=root)
        write_deltalake(SNAPSHOTS.path(local), pa.Table.from_pandas(snaps, schema=SNAPSHOTS.arrow_schema(),
                                                                     preserve_index=False), partition_by=["period"])
        job(local, "outlinks_embed").run(spark, local, dimensions=16)
        job(local, "outlinks_related").run(spark, local, k=5)
        job(local, "outlinks_features").run(spark, local, history_size=2)
        return (lake.to_pandas(EMBEDDINGS, local).sort_values("url", ignore_index=True),
                lake.to_pandas(RELATED_PAGES, local), lake.to_pandas(FEATURES, local))

    vectors, related, features = build(snapshots, "as_crawled")
    train_rows, test_rows, eval_period = held_out_split(features)
    assert eval_period == held_out
    leaked = vectors[vectors["as_of_period"] >= held_out]
    assert leaked.empty, (f"{len(leaked)} of {len(vectors)} page vectors are as of the held-out period "
                          f"{held_out} or later (as_of_period {sorted(set(leaked['as_of_period']))})")
    assert set(related["url"]) | set(related["neighbour"]) <= set(vectors["url"])

    # The held-out week's texts replaced by words never seen before, links and digests unchanged.
    swapped = snapshots.copy()
    later = swapped["period"] >= held_out
    swapped.loc[later, "text"] = [f"heldout{i % 7} " * 30 + f"only{i}" for i in range(int(later.sum()))]
    other_vectors, _, other_features = build(swapped, "texts_swapped")
    other_train, other_test, _ = held_out_split(other_features)

    assert list(vectors["url"]) == list(other_vectors["url"])
    assert np.allclose(np.vstack(vectors["vector"]), np.vstack(other_vectors["vector"]), atol=1e-5), \
        "page vectors depend on the held-out period's texts"
    for name, want, got in [("training", train_rows, other_train), ("held-out test", test_rows, other_test)]:
        want = want.sort_values(["period", "url"], ignore_index=True)
        got = got.sort_values(["period", "url"], ignore_index=True)
        pd.testing.assert_frame_equal(want, got, check_exact=False, rtol=1e-6, atol=1e-9,
                                      obj=f"{name} rows (held-out texts swapped)")


def test_a_crawl_of_one_period_has_no_vectors_yet_and_its_chain_runs(spark, lake_cfg, tmp_path):
    """The live platform's first outlinks_features run sees one period only: everything is held out, so
    there is no text to fit the embedding on; the chain runs and writes empty tables instead of failing."""
    from deltalake import write_deltalake

    from focuscrawl import lake
    from focuscrawl.outlinks.tables import EMBEDDINGS, RELATED_PAGES

    cfg, snapshots = lake_cfg
    local = dataclasses.replace(cfg, lake=str(tmp_path / "lake"), var_dir=tmp_path)
    first = snapshots[snapshots["period"] == snapshots["period"].min()]
    write_deltalake(SNAPSHOTS.path(local), pa.Table.from_pandas(first, schema=SNAPSHOTS.arrow_schema(),
                                                                 preserve_index=False), partition_by=["period"])
    assert job(local, "outlinks_embed").run(spark, local, dimensions=16) == 0
    assert job(local, "outlinks_related").run(spark, local, k=5) == 0
    job(local, "outlinks_features").run(spark, local, history_size=2)
    assert lake.to_pandas(EMBEDDINGS, local).empty and lake.to_pandas(RELATED_PAGES, local).empty
    # No period is labelled yet (a label is the next period's snapshot): training has nothing to do, and says so.
    from focuscrawl.outlinks.training import NotEnoughHistory

    with pytest.raises(NotEnoughHistory, match="0 labelled period"):
        job(local, "outlinks_train").run(local, history_size=2)


def test_features_wait_until_a_model_could_train_or_score_on_them(lake_cfg, tmp_path, capsys):
    """outlinks_features' first step: a young crawl's snapshots give no model anything to train on until they span
    ``history_size`` look-back periods, one labelled by its next and one more held out, so the DAG's chain stops
    there (``NOTHING_TO_DO``: its task is skipped) until then, or at once when a model is already trained to score
    with. The features are built as a DAG task builds them on a lake this small, in its own process
    (``focuscrawl.lake.spark.in_process``; test_frame_transforms.py has each step equal on Spark): the rule under
    test is the readiness's, and on Spark the two builds took 57 of the file's 176 CPU-s."""
    from deltalake import write_deltalake

    from focuscrawl import lake
    from focuscrawl.lake.spark import NOTHING_TO_DO
    from focuscrawl.outlinks.store import ModelVersion
    from focuscrawl.outlinks.features import labelled
    from focuscrawl.outlinks.tables import FEATURES
    from focuscrawl.outlinks.training import NotEnoughHistory, held_out_split, model_store

    cfg, snapshots = lake_cfg
    local = dataclasses.replace(cfg, lake=str(tmp_path / "lake"), var_dir=tmp_path)
    ready = job(local, "outlinks_ready")
    history = ["--history-size", "2"]
    monkey = pytest.MonkeyPatch()
    monkey.setattr(ready, "settings", lambda: local)
    try:
        assert ready.main(history) == NOTHING_TO_DO  # no table yet
        periods = sorted(snapshots["period"].unique())
        for n in range(1, 6):
            write_deltalake(SNAPSHOTS.path(local), pa.Table.from_pandas(
                snapshots[snapshots["period"] == periods[n - 1]], schema=SNAPSHOTS.arrow_schema(), preserve_index=False),
                partition_by=["period"], mode="append")
            assert ready.main(history) == (0 if n == 5 else NOTHING_TO_DO), n
            if n >= 4:  # the rule is the training's own: four periods' features cannot train, five can
                assert job(local, "outlinks_embed").run_in_process(local, dimensions=8) > 0
                job(local, "outlinks_related").run_in_process(local, k=3)
                job(local, "outlinks_features").run_in_process(local, history_size=2)
                features = lake.to_pandas(FEATURES, local)
                if n == 4:
                    with pytest.raises(NotEnoughHistory, match="1 labelled period"):
                        held_out_split(features)
                else:
                    held_out_split(features)
                    assert labelled(features)["period"].nunique() == 2
        said = capsys.readouterr().out
        assert "4 period(s) of snapshots: the first model trains on 5" in said and "5 period(s)" in said
        assert ready.main(["--history-size", "3"]) == NOTHING_TO_DO  # a longer look-back needs a sixth

        # One period of a fresh lake beside a model trained before: its features are scored at once.
        fresh = dataclasses.replace(local, lake=str(tmp_path / "fresh"))
        write_deltalake(SNAPSHOTS.path(fresh), pa.Table.from_pandas(
            snapshots[snapshots["period"] == periods[0]], schema=SNAPSHOTS.arrow_schema(), preserve_index=False),
            partition_by=["period"])
        monkey.setattr(ready, "settings", lambda: fresh)
        assert ready.main(history) == NOTHING_TO_DO
        store = model_store(fresh)
        store.promote_newest(store.register(ModelVersion(name="NNL-ET_LBLA/int", version=0, metrics={}, data_version=0,
                                                         eval_period=0, params={}, created_at="2026-12-05"), {}), None)
        assert ready.main(history) == 0
    finally:
        monkey.undo()
