"""The source schedule's fitted parameters in the model registry, over a fake registry: each run's estimates are
the next stored version with the knobs and the Delta versions it read, and its champion; a rollback makes the next
run plan with the older estimates and fit none, until a newer version is promoted."""

from __future__ import annotations

import pandas as pd

from fake_registry import FakeRegistry
from focuscrawl.config import settings
from focuscrawl.ephemeral.fitted import model_store, plan_estimates
from focuscrawl.orchestration.model_families import family, mirror, promote_registered

NAME = "sources.estimates"


def estimates(lam: float) -> pd.DataFrame:
    return pd.DataFrame({"source_url": ["https://a.example/", "https://b.example/"], "lam": [lam, lam / 2],
                         "P": [3.0, 1.0], "mu": [1e-4, 2e-4], "host": ["a.example", "b.example"]})


def test_each_fit_is_a_version_and_a_rollback_plans_with_the_older_one(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    cfg, fits = settings(), []

    def fit(lam):
        def run():
            fits.append(lam)
            return estimates(lam)
        return run

    knobs = {"feedback": "RELEVANCE", "freshness_half_life_s": 86400.0}
    for lam, read in ((0.1, {"source_recrawls": 3, "source_pages": 7}), (0.2, {"source_recrawls": 5, "source_pages": 9})):
        planned, done = plan_estimates(model_store(cfg), fit(lam), knobs, read)
        assert planned["lam"].iloc[0] == lam
    assert done == "v2 fitted"
    sources, registry = family(cfg, "sources"), FakeRegistry()
    mirror(sources, registry)
    logged = registry.of(NAME)
    assert [e["delta_versions"] for e in logged] == [{"source_recrawls": 3, "source_pages": 7},
                                                     {"source_recrawls": 5, "source_pages": 9}]
    assert logged[0]["params"] == {**knobs, "sources": 2} and logged[0]["metrics"] == {}
    assert registry.aliases[NAME] == 2

    promote_registered(sources, registry, NAME, 1)
    planned, done = plan_estimates(model_store(cfg), fit(0.3), knobs, {"source_recrawls": 6, "source_pages": 9})
    assert done == "rolled back: v1's estimates, none fitted" and fits == [0.1, 0.2]
    pd.testing.assert_frame_equal(planned, estimates(0.1))
    promote_registered(sources, registry, NAME, 2)
    assert plan_estimates(model_store(cfg), fit(0.3), knobs, {})[1] == "v3 fitted" and fits[-1] == 0.3


def test_a_fit_of_no_source_is_no_version(tmp_path, monkeypatch):
    # a run before the first recrawl landed plans nothing and leaves nothing a rollback could pick
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    store = model_store(settings())
    planned, done = plan_estimates(store, lambda: estimates(0.1).iloc[:0], {}, {"source_recrawls": 0})
    assert planned.empty and done == "none fitted: no source has a recrawl or a fetched page yet"
    assert store.versions("estimates") == [] and store.champion("estimates") is None


def test_a_rollback_made_during_a_fit_is_what_the_run_plans_with(tmp_path, monkeypatch):
    # `models promote` lands while a source_schedule run fits: the run's fit is kept, unpromoted, and it plans
    # with the rolled-back estimates, as every later run does until a newer version is promoted
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    store = model_store(settings())
    for lam in (0.1, 0.2):
        plan_estimates(store, lambda: estimates(lam), {}, {})

    def fit_while_rolled_back():
        store.make_champion(store.versions("estimates")[0])
        return estimates(0.3)

    planned, done = plan_estimates(store, fit_while_rolled_back, {}, {})
    assert done == "v3 fitted, not planned with: rolled back to v1 while it was fitted: the rollback holds"
    pd.testing.assert_frame_equal(planned, estimates(0.1))
    assert plan_estimates(store, lambda: estimates(0.4), {}, {})[1] == "rolled back: v1's estimates, none fitted"


def test_a_fit_is_measured_on_what_came_after_its_data_and_a_failed_measure_costs_only_the_figures(tmp_path, monkeypatch):
    """The registry measures each fit from the tables at the Delta versions it read (focuscrawl.ephemeral.fitted.held_out);
    a measure that fails (e.g. a vacuumed version) is said in the task's line, and the fit is recorded without it."""
    import dataclasses

    import pyarrow as pa
    from deltalake import write_deltalake

    from focuscrawl.ephemeral.tables import SOURCE_RECRAWLS
    from focuscrawl.lake import version
    from tests.ephemeral.test_source_evaluation import SOURCES, clicks, recrawls

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    cfg = settings()
    rates = {s: 1e-4 * 2 ** i for i, s in enumerate(SOURCES)}
    rows = recrawls(rates).assign(host=lambda f: f["source_url"].str[8:-1])
    schema = SOURCE_RECRAWLS.arrow_schema()
    def part(frame):
        return pa.Table.from_pandas(frame.reindex(columns=schema.names), schema=schema, preserve_index=False)

    write_deltalake(SOURCE_RECRAWLS.path(cfg), part(rows.iloc[: len(rows) // 2]))
    read = {"source_recrawls": version(SOURCE_RECRAWLS, cfg)}
    write_deltalake(SOURCE_RECRAWLS.path(cfg), part(rows.iloc[len(rows) // 2:]), mode="append")  # after the fit
    plan_estimates(model_store(cfg), lambda: estimates(0.1), {"feedback": "CLICKS"}, read)
    registry = FakeRegistry()
    mirror(family(cfg, "sources"), registry)
    metrics = registry.of(NAME)[0]["metrics"]
    assert metrics["held_out_recrawls"] == round(0.2 * len(rows) // 2) and metrics["lam_skill_low"] > 0, metrics
    assert model_store(cfg).versions("estimates")[0].metrics == metrics

    def vacuumed(meta):
        raise FileNotFoundError("part-0001.parquet: not found")

    plan_estimates(model_store(cfg), lambda: estimates(0.2), {"feedback": "CLICKS"}, read)
    lines = mirror(dataclasses.replace(family(cfg, "sources"), held_out=vacuumed), registry)
    assert lines[0].endswith("held-out figures not measured for v2: FileNotFoundError: part-0001.parquet: not found")
    assert registry.of(NAME)[1]["metrics"] == {}


def test_a_registry_behind_by_several_fits_measures_the_newest_and_the_champion_and_tags_the_others(tmp_path, monkeypatch):
    """Measuring a fit costs as much as a refit: a run that finds a backlog measures only the newest fit and the
    champion (here a rolled-back one), so a registry behind the loop catches up; the others say why they have none."""
    import dataclasses

    from focuscrawl.orchestration.model_families import HELD_OUT_TAG

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    cfg, measured = settings(), []
    store = model_store(cfg)
    for lam in (0.1, 0.2, 0.3, 0.4, 0.5):
        plan_estimates(store, lambda lam=lam: estimates(lam), {}, {})
    store.make_champion(store.versions("estimates")[1])  # a rollback to v2 before the registry ran

    def held_out(meta):
        measured.append(meta.version)
        return {"lam_mae": meta.version / 10}

    registry = FakeRegistry()
    lines = mirror(dataclasses.replace(family(cfg, "sources"), held_out=held_out), registry)
    assert measured == [2, 5]
    logged = registry.of(NAME)
    assert [bool(e["metrics"]) for e in logged] == [False, True, False, False, True]
    assert [HELD_OUT_TAG in e["tags"] for e in logged] == [True, False, True, True, False]
    assert "v5 was stored before the registry reached this version" in logged[0]["tags"][HELD_OUT_TAG]
    assert lines[0].endswith("superseded before measured: [1, 3, 4]") and registry.aliases[NAME] == 2
    plan_estimates(store, lambda: estimates(0.6), {}, {})  # rolled back: nothing is fitted, nothing new to record
    assert mirror(dataclasses.replace(family(cfg, "sources"), held_out=held_out), registry)[0].startswith(
        f"{NAME}: logged store version(s) none new") and measured == [2, 5]


def test_a_fit_stored_while_the_registry_records_leaves_the_alias_on_the_newest_recorded_champion(tmp_path, monkeypatch):
    """A loop refitting faster than the registry records: the champion when the run ends is a fit it has not
    recorded, so the alias names the newest champion it did record (it had stayed unset on the live platform while
    every run ended behind), and the next run moves it on."""
    import dataclasses

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    store = model_store(settings())
    for lam in (0.1, 0.2):
        plan_estimates(store, lambda lam=lam: estimates(lam), {}, {})

    def held_out_while_the_loop_refits(meta):
        plan_estimates(store, lambda: estimates(0.3), {}, {})  # v3, promoted while v2 is measured
        return {"lam_mae": 0.5}

    sources, registry = family(settings(), "sources"), FakeRegistry()
    lines = mirror(dataclasses.replace(sources, held_out=held_out_while_the_loop_refits), registry)
    assert store.champion("estimates").version == 3 and registry.aliases[NAME] == 2
    assert lines[0] == (f"{NAME}: logged store version(s) [1, 2]; champion v2 (alias moved) (the store's champion "
                        "v3, stored meanwhile, is recorded by the next run); superseded before measured: [1]")
    mirror(dataclasses.replace(sources, held_out=lambda meta: {"lam_mae": 0.4}), registry)
    assert registry.aliases[NAME] == 3
