"""Acceptance on synthetic snapshots: LBLA models beat the NNL-Pr and CCR baselines (seed 002, Section 7)."""

from __future__ import annotations

import pytest

from focuscrawl.outlinks.experiment import prepare, run_experiment
from focuscrawl.outlinks.models import model_specs
from focuscrawl.outlinks.synthetic import generate_snapshots


@pytest.mark.slow
def test_lbla_beats_nnl_pr_and_ccr_on_spearman_and_precision_area():
    snapshots = generate_snapshots(n_pages=1000, seed=0)
    features = prepare(snapshots, history_size=4, dimensions=30)
    specs = {k: v for k, v in model_specs().items() if k in ("NNL-ET_LBLA", "NNL-Pr", "CCR")}
    result = run_experiment(features, 4, specs=specs, n_estimators=100, min_samples_leaf=10)
    rho, area = result.spearman["NNL"], result.pk_area["pk_area"]
    for scope in ("int", "ext"):
        for baseline in ("NNL-Pr", "CCR"):
            assert rho[(scope, "NNL-ET_LBLA")] > rho[(scope, baseline)], (scope, baseline, rho)
            assert area[(scope, "NNL-ET_LBLA")] > area[(scope, baseline)], (scope, baseline, area)
    assert abs(rho[("int", "CCR")]) < 0.1  # content change says little about link change
