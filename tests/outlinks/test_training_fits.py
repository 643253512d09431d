"""The outlink models fitted side by side (``training.fit_models``) are the models fitted one after another:
same predictions, same metrics, same registered versions, at a fixed seed (seed 002, Section 7's line-up)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from focuscrawl.outlinks.models import model_specs
from focuscrawl.outlinks.schema import SCOPES
from focuscrawl.outlinks.store import ModelStore
from focuscrawl.outlinks.training import fit_models, held_out_split, train_and_register

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from train_bench import features as synthetic_features  # noqa: E402  (the training bench's feature rows)

MODELS = ("NNL-ET_LBLA", "NNL-NGB", "PNL-ET")
OPTIONS = {"n_estimators": 15}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return synthetic_features(400, 8, seed=3)


def test_side_by_side_fits_are_the_sequential_fits(frame):
    train_rows, test_rows, _ = held_out_split(frame)
    specs = model_specs()
    pairs = [(specs[m], s) for m in MODELS for s in SCOPES]
    one = fit_models(pairs, train_rows, test_rows, 4, seed=7, cores=1, **OPTIONS)
    two = fit_models(pairs, train_rows, test_rows, 4, seed=7, cores=2, **OPTIONS)
    assert len(one) == len(two) == len(pairs)
    for (spec, scope), (m1, metrics1), (m2, metrics2) in zip(pairs, one, two):
        cols = spec.columns(scope, 4)
        np.testing.assert_array_equal(m1.predict(test_rows[cols]), m2.predict(test_rows[cols]))
        assert metrics1 == metrics2, (spec.name, scope)
    # a different seed gives other models: the comparison above can fail
    other = fit_models(pairs[:1], train_rows, test_rows, 4, seed=8, cores=2, **OPTIONS)
    cols = pairs[0][0].columns(pairs[0][1], 4)
    assert not np.array_equal(other[0][0].predict(test_rows[cols]), one[0][0].predict(test_rows[cols]))


def test_registered_versions_do_not_depend_on_the_cores(frame, tmp_path):
    rows = {cores: train_and_register(frame, 1, ModelStore(tmp_path / str(cores)), 4, MODELS, seed=7,
                                      cores=cores, **OPTIONS) for cores in (1, 2)}

    def strip(r):
        return [{k: v for k, v in row.items() if k != "created_at"} for row in r]

    assert strip(rows[1]) == strip(rows[2])
    assert [r["name"] for r in rows[2]] == [f"{m}/{s}" for m in MODELS for s in SCOPES]


def test_negative_cores_are_refused(frame):
    train_rows, test_rows, _ = held_out_split(frame)
    with pytest.raises(ValueError, match="0 for every usable core"):
        fit_models([(model_specs()["NNL-ET_LBLA"], "int")], train_rows, test_rows, 4, cores=-1)


def test_every_core_fits_side_by_side_only_with_enough_rows(frame, monkeypatch):
    """``cores=0`` (the job's default) fits in process below ``SIDE_BY_SIDE_ROWS`` training rows, where starting the
    workers costs more than the fits; above it, on every usable core; an explicit ``cores`` is kept either way."""
    import joblib

    from focuscrawl.outlinks import training

    train_rows, test_rows, _ = held_out_split(frame)
    pairs = [(model_specs()["NNL-ET_LBLA"], s) for s in SCOPES]
    pools: list[int] = []

    class Parallel:
        def __init__(self, n_jobs):
            pools.append(n_jobs)

        def __call__(self, calls):
            return [f(*args, **kwargs) for f, args, kwargs in calls]

    monkeypatch.setattr(joblib, "Parallel", Parallel)
    monkeypatch.setattr(training, "usable_cores", lambda: 2)
    assert len(train_rows) < training.SIDE_BY_SIDE_ROWS
    fit_models(pairs, train_rows, test_rows, 4, **OPTIONS)
    assert pools == []  # in process
    fit_models(pairs, train_rows, test_rows, 4, cores=2, **OPTIONS)
    assert pools == [2]
    monkeypatch.setattr(training, "SIDE_BY_SIDE_ROWS", len(train_rows))
    fit_models(pairs, train_rows, test_rows, 4, **OPTIONS)
    assert pools == [2, 2]
