"""The training job refuses, at run time, page vectors as of the held-out period or later
(spark_jobs/outlinks_train.py; the Spark chain's leakage test is tests/outlinks/test_spark_jobs.py)."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from focuscrawl.outlinks.leakage import HeldOutLeak, check_vectors_before
from focuscrawl.outlinks.tables import EMBEDDINGS, FEATURES


def test_vectors_before_the_held_out_period_pass_and_any_later_one_is_named():
    check_vectors_before([1, 2, 3], 4)
    check_vectors_before([], 4)
    with pytest.raises(HeldOutLeak, match=r"2 of 4 page vectors .* as of period 4, 5, the held-out period 4"):
        check_vectors_before([2, 3, 4, 5], 4)


def _train_job(cfg):
    spec = importlib.util.spec_from_file_location("outlinks_train", cfg.home / "spark_jobs" / "outlinks_train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_job_stops_before_fitting_when_a_vector_is_of_the_held_out_period(cfg, tmp_path):
    from deltalake import write_deltalake

    local = dataclasses.replace(cfg, lake=str(tmp_path / "lake"), var_dir=tmp_path)
    urls = [f"http://s.test/{i}" for i in range(6)]
    features = pd.DataFrame({"url": urls * 3, "period": np.repeat(np.int32([1, 2, 3]), len(urls))})
    for column in FEATURES.column_names:
        if column not in features:
            features[column] = np.linspace(0.0, 1.0, len(features))
    write_deltalake(FEATURES.path(local), pa.Table.from_pandas(features[FEATURES.column_names],
                                                                schema=FEATURES.arrow_schema(), preserve_index=False))
    vectors = pd.DataFrame({"url": urls, "as_of_period": np.int32([1, 2, 2, 2, 3, 2]),
                            "vector": [np.ones(4, np.float32)] * len(urls)})
    write_deltalake(EMBEDDINGS.path(local), pa.Table.from_pandas(vectors, schema=EMBEDDINGS.arrow_schema(),
                                                                  preserve_index=False))
    with pytest.raises(HeldOutLeak, match="1 of 6 page vectors .* held-out period 3"):
        _train_job(local).run(local, ["NNL-Av"])
    assert not (tmp_path / "models").exists(), "a model was registered from leaked features"
