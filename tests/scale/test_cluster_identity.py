"""Issue 10, point 1: the related-pages and training jobs give the same results on a standalone Spark
cluster (1 master, 2 workers, started by the product) as on ``local[*]``, with only the master URL changed.

Both runs go through ``spark_submit`` (the DAGs' command line) on identical input tables, the two jobs chained in
one application (``spark_jobs/chain.py``, as ``outlinks_features`` chains its jobs: one driver start a side, not
two); the cluster run must really have run on the cluster (the master lists the application as completed).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from focuscrawl.outlinks.tables import MODELS, RELATED_PAGES
from focuscrawl.outlinks.training import model_key, model_store
from focuscrawl.services.spark_cluster import SparkCluster, spark_submit
from helpers import outlinks_job_inputs, write_outlinks_job_inputs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]  # ~2-3 min unloaded

K, HISTORY, MODEL = 5, 2, "NNL-ET_LBLA"


@pytest.fixture(scope="module")
def cluster(cfg):
    cluster = SparkCluster(cfg, workers=2, worker_cores=1, worker_memory="1g")
    cluster.start(timeout=180)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def inputs():
    return outlinks_job_inputs(K, HISTORY)


def run_jobs(cfg, root, master: str, inputs) -> object:
    """The two jobs on their own lake and model store, with the master URL as the one changed setting."""
    embeddings, features, _ = inputs
    run_cfg = dataclasses.replace(cfg, var_dir=root, lake=str(root / "lake"), spark_master=master)
    write_outlinks_job_inputs(run_cfg, embeddings, features)
    said = spark_submit(run_cfg, cfg.home / "spark_jobs" / "chain.py", "outlinks_related.py", "--k", str(K), "--",
                        "outlinks_train.py", "--models", MODEL, "--history-size", str(HISTORY))
    assert f"{len(embeddings) * K} pairs" in said and "chain: outlinks_train.py" in said, said[-2000:]
    return run_cfg


def table(spec, run_cfg, keys) -> pd.DataFrame:
    from deltalake import DeltaTable

    return DeltaTable(spec.path(run_cfg)).to_pandas().sort_values(keys, ignore_index=True)


def test_related_and_training_jobs_match_local_on_a_two_worker_cluster(cfg, cluster, inputs, tmp_path):
    local = run_jobs(cfg, tmp_path / "local", "local[*]", inputs)
    remote = run_jobs(cfg, tmp_path / "cluster", cluster.url, inputs)

    assert cluster.alive_workers() == 2
    assert cluster.completed_apps()[-1:] == ["outlinks_related"]  # the chain's session, named by its first job

    # Related pages: the same neighbours in the same order, the same similarities, both equal to numpy's.
    keys = ["url", "rank"]
    on_local, on_cluster = table(RELATED_PAGES, local, keys), table(RELATED_PAGES, remote, keys)
    reference = inputs[2].sort_values(keys, ignore_index=True)
    assert len(on_cluster) == len(on_local) == 150 * K
    assert on_cluster[["url", "rank", "neighbour"]].equals(on_local[["url", "rank", "neighbour"]])
    assert on_cluster["neighbour"].tolist() == reference["neighbour"].tolist()
    np.testing.assert_allclose(on_cluster["similarity"], on_local["similarity"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(on_cluster["similarity"], reference["similarity"], rtol=0, atol=1e-5)

    # Training: the same registered versions and metrics, and the stored models predict the same values.
    columns = ["name", "version", "spearman", "pk_area", "eval_period", "promoted"]
    models_local, models_cluster = table(MODELS, local, ["name"])[columns], table(MODELS, remote, ["name"])[columns]
    assert models_cluster["name"].tolist() == [f"{MODEL}/ext", f"{MODEL}/int"]
    pd.testing.assert_frame_equal(models_cluster, models_local, check_exact=False, rtol=1e-9)
    features = inputs[1]
    for scope in ("int", "ext"):
        meta_l, model_l = model_store(local).load(model_key(MODEL, scope))
        meta_c, model_c = model_store(remote).load(model_key(MODEL, scope))
        assert meta_c.features == meta_l.features
        predicted = np.asarray(model_c.predict(features[meta_c.features]), dtype=float)
        np.testing.assert_allclose(predicted, np.asarray(model_l.predict(features[meta_l.features]), dtype=float),
                                   rtol=1e-9, atol=1e-12)
        assert predicted.std() > 0  # a constant model would make the comparison empty
