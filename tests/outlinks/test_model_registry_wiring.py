"""The outlink models in the model registry, over a fake registry: the mirror logs each stored version with its
parameters, held-out metrics and the feature table's Delta version, once; the promotion rule's champion is the
registry's ``champion`` alias; a rollback moves both the store's champion and the alias, and holds until a newer
version is trained."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fake_registry import FakeRegistry
from focuscrawl.config import settings
from focuscrawl.orchestration.model_families import ModelFamily, family, mirror, promote_registered
from focuscrawl.outlinks.store import ModelStore
from focuscrawl.outlinks.training import promote_latest, train_and_register

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from train_bench import features as synthetic_features  # noqa: E402  (the training bench's feature rows)

INT, EXT = "outlinks.NNL-ET_LBLA.int", "outlinks.NNL-ET_LBLA.ext"


def outlinks(store) -> ModelFamily:
    """The outlinks family (:func:`focuscrawl.orchestration.model_families.family`) over a test store."""
    return ModelFamily("outlinks", store, keys=("NNL-ET_LBLA/int", "NNL-ET_LBLA/ext"), data_table="outlink_features")


@pytest.fixture(scope="module")
def frame():
    return synthetic_features(400, 8, seed=3)


def train(frame, store, data_version, promote=True):
    return train_and_register(frame, data_version, store, 4, ["NNL-ET_LBLA"], promote=promote, cores=1,
                              n_estimators=5)


def test_each_version_is_logged_once_with_its_lineage_and_the_champion_is_the_alias(frame, tmp_path):
    store, registry = ModelStore(tmp_path), FakeRegistry()
    rows = train(frame, store, data_version=5)
    assert registry.logged == []  # training records nothing in the registry: the DAG's register task does
    assert mirror(outlinks(store), registry) == [f"{INT}: logged store version(s) [1]; champion v1 (alias moved)",
                                                 f"{EXT}: logged store version(s) [1]; champion v1 (alias moved)"]
    assert [e["name"] for e in registry.logged] == [INT, EXT]
    first = registry.logged[0]
    assert first["experiment"] == "outlinks" and first["files"] == ["model.joblib", "meta.json"]
    assert first["delta_versions"] == {"outlink_features": 5}
    assert first["metrics"] == {"spearman": rows[0]["spearman"], "pk_area": rows[0]["pk_area"]}
    assert {"model": "NNL-ET_LBLA", "scope": "int", "history_size": 4, "seed": 0, "n_estimators": 5,
            "eval_period": rows[0]["eval_period"]}.items() <= first["params"].items()
    assert first["params"]["train_rows"] > 0 and first["tags"]["focuscrawl.store_version"] == 1
    meta = json.loads((tmp_path / "NNL-ET_LBLA__int" / "v1" / "meta.json").read_text())
    assert meta["registry_version"] == 1 and meta["promoted"]
    assert registry.aliases == {INT: 1, EXT: 1}  # the first version of each is promoted (no champion yet)

    train(frame, store, data_version=6, promote=False)  # the DAG's train step: no promotion
    for promotion in promote_latest(store, ["NNL-ET_LBLA"]):  # its score step
        mirror(outlinks(store), registry)  # the model_registry DAG's record task, for this family
        champion = store.champion(promotion.model)
        assert registry.aliases[outlinks(store).registered_name(promotion.model)] == champion.registry_version
        assert champion.version == (2 if promotion.promoted else 1)
    assert registry.logged[-1]["delta_versions"] == {"outlink_features": 6} and len(registry.logged) == 4
    calls = registry.alias_calls
    assert mirror(outlinks(store), registry)[0].startswith(f"{INT}: logged store version(s) none new")
    assert registry.alias_calls == calls  # the aliases already name the store's champions: not set again


def test_a_rollback_moves_the_stores_champion_and_the_alias_and_holds_until_a_newer_version(frame, tmp_path):
    store, registry = ModelStore(tmp_path), FakeRegistry()
    train(frame, store, data_version=1)
    train(frame, store, data_version=2)
    mirror(outlinks(store), registry)
    promote_registered(outlinks(store), registry, INT, 2)
    assert store.champion("NNL-ET_LBLA/int").version == 2 and registry.aliases[INT] == 2
    rolled = promote_registered(outlinks(store), registry, INT, 1)
    assert rolled.version == 1 and store.champion("NNL-ET_LBLA/int").version == 1 and registry.aliases[INT] == 1
    # the next score run judges no version twice: the rollback stands, and the mirror keeps the alias on it
    (kept, _) = promote_latest(store, ["NNL-ET_LBLA"])
    assert not kept.promoted and kept.reason == "judged before; the champion stays v1"
    mirror(outlinks(store), registry)
    assert store.champion("NNL-ET_LBLA/int").version == 1 and registry.aliases[INT] == 1
    train(frame, store, data_version=3, promote=False)  # a newer version is judged as usual
    (judged, _) = promote_latest(store, ["NNL-ET_LBLA"])
    assert judged.version == 3 and not judged.reason.startswith("judged before")
    with pytest.raises(LookupError, match="no stored outlinks model is version 7"):
        promote_registered(outlinks(store), registry, INT, 7)


def test_registry_names_map_back_to_store_keys(monkeypatch, tmp_path):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    found = family(settings(), "outlinks")  # the four models the DAGs train, stored or not yet
    assert found.registered_name("NNL-ET_LBLA/int") == INT and found.store_key(INT) == "NNL-ET_LBLA/int"
    assert found.store_key("outlinks.NNL-ET_LBLA.both") is None and found.store_key("fue.reference") is None
    assert family(settings(), "pages") is None  # no active project: no page model store
