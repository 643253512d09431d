"""The page relevance models in the model registry, over a fake registry: each refit is logged once with its
parameters and held-out figures, the store's champion is the ``champion`` alias, and a rollback moves the champion
the fetching processes' scorer follows, holding until a newer version is judged."""

from __future__ import annotations

from pathlib import Path

from fake_registry import FakeRegistry
from focuscrawl.core.status_file import write_status
from focuscrawl.orchestration.model_families import family, mirror, owner, promote_registered
from focuscrawl.relevance.score import PageScorer
from focuscrawl.relevance.train import store_for, train_page_model
from tests.relevance.test_live_relevance import trained  # noqa: F401  (the fixture: a page focus of local files)
from tests.relevance.test_page_focus import HISTORY


def test_each_refit_is_recorded_and_a_rollback_moves_what_the_scorer_follows(trained):  # noqa: F811
    project, cfg = trained
    write_status(Path(cfg.var_dir) / "run" / "project.json", {"name": project.name})  # what `up` makes active
    name = f"pages.{project.name}.TFIDF-LR"
    first, second = train_page_model(project, cfg), train_page_model(project, cfg)
    pages, registry = family(cfg, "pages"), FakeRegistry()
    assert pages.store.root == store_for(project, cfg).root and owner(cfg, name).name == pages.name
    mirror(pages, registry)
    logged = registry.of(name)
    assert [e["tags"]["focuscrawl.store_version"] for e in logged] == [1, 2]
    assert logged[0]["experiment"] == f"pages.{project.name}"
    assert logged[0]["metrics"]["auc"] == first.evaluation["auc"]["value"]  # held-out, as the loop measured it
    assert {"model": "TFIDF-LR", "seed": 0, "train_pages": first.evaluation["train_pages"]}.items() <= \
        logged[0]["params"].items()
    assert logged[0]["delta_versions"] == {}  # example pages, not a table: split.json names every page it read
    assert logged[0]["files"] == ["evaluation.json", "model.joblib", "split.json", "meta.json"]
    assert registry.aliases[name] == pages.store.champion("TFIDF-LR").registry_version == (2 if second.promoted else 1)

    scorer = PageScorer(pages.store.root, "tfidf-lr", ["en"], check_every=0)
    promote_registered(pages, registry, name, 2)
    assert scorer.score(HISTORY[0].format("x"), "en")[1] == "TFIDF-LR/v2"
    promote_registered(pages, registry, name, 1)  # the rollback: the scorer follows the store's champion
    assert scorer.score(HISTORY[0].format("x"), "en")[1] == "TFIDF-LR/v1" and registry.aliases[name] == 1
    calls = registry.alias_calls
    mirror(pages, registry)
    assert registry.alias_calls == calls  # the alias already names the champion
    third = train_page_model(project, cfg)  # a newer version is judged by the rule (held-out AUC not worse)
    assert third.version == 3 and third.reason != "" and pages.store.versions("TFIDF-LR")[-1].considered
