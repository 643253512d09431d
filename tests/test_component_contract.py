"""Issue 21, point 1: one contract (``focuscrawl.testing.check_component``) over every registered name.

Parametrized at collection over every registry's ``names()``, so registering a name adds its checks:
a name that breaks the contract fails the suite. ``test_every_registry_has_an_adapter`` finds the
registries in the source, so a new registry without an adapter fails too. The last tests register
deliberately broken components in a scratch registry and show each check fails on them.
"""

from __future__ import annotations

import ast
import os
import random
from pathlib import Path

import pytest

from focuscrawl.fue.methods import _Method
from focuscrawl.outlinks.models import ESTIMATORS as OUTLINK_ESTIMATORS, NnlAverage
from focuscrawl.core.registry import Registry
from focuscrawl.testing import adapter_for, adapters, all_checks, check_component, with_registry

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("include/focuscrawl", "dags", "streaming", "spark_jobs")
CHECKS = all_checks()
# Breaches found by the contract and not fixed yet; strict: a fixed one must leave this table.
KNOWN_BREACHES: dict[str, str] = {}


@pytest.mark.parametrize("check", [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_BREACHES[c.id], strict=True))
                                   if c.id in KNOWN_BREACHES else c for c in CHECKS], ids=[c.id for c in CHECKS])
def test_contract(check) -> None:
    check()


def _registries_in_source() -> set[tuple[str, str]]:
    """(module, name) of every module-level ``NAME = Registry(...)`` / ``Registry[...](...)`` in the product."""
    found = set()
    for top in PRODUCT:
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.parse(path.read_text()).body:
                value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
                call = value.func if isinstance(value, ast.Call) else None
                call = call.value if isinstance(call, ast.Subscript) else call
                if isinstance(call, ast.Name) and call.id == "Registry":
                    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                    module = ".".join(path.relative_to(ROOT / "include").with_suffix("").parts) if top.startswith(
                        "include") else str(path.relative_to(ROOT))
                    found.add((module, target.id))
    return found


def test_every_registry_has_an_adapter() -> None:
    import importlib

    found = _registries_in_source()
    assert len(found) >= 7, found  # ranking, community, scheduler, sampler, graph estimator, outlink, related
    covered = {id(a.registry) for a in adapters()}
    missing = [f"{m}.{n}" for m, n in sorted(found) if id(getattr(importlib.import_module(m), n)) not in covered]
    assert missing == [], f"registries without a contract adapter in focuscrawl.testing: {missing}"
    assert len(covered) == len(adapters()) == len(found)


def test_every_registered_name_is_checked() -> None:
    checked = {(c.registry.kind, c.name) for c in CHECKS}
    assert checked == {(a.registry.kind, n) for a in adapters() for n in a.registry.names()}
    kinds = {c.check for c in CHECKS}
    assert kinds == {"name_round_trips", "implements_protocol", "init_only_stores_parameters", "deterministic", "empty_input", "no_io",
                     "fit_returns_self", "keyword_only_constructor"}


def test_an_unknown_registry_is_refused() -> None:
    with pytest.raises(KeyError, match="no contract adapter"):
        list(check_component(Registry("thing"), "X"))


# -- each check fails on a component broken for it ------------------------------------------------


class _Fine(_Method):  # the base the package's ranking methods share
    name = "FINE"

    def score(self, evidence):
        return float(evidence.count)


class _Misnamed(_Fine):
    name = "OTHER"


class _TwiceRegistered(_Fine):
    name = "TWICE"


class _ChangesParameter(_Fine):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed = self.seed + 1


class _ForgetsParameter(_Fine):
    def __init__(self, *, window: int = 3, **kwargs):
        super().__init__(**kwargs)


class _PositionalArgument(_Fine):
    def __init__(self, window: int = 3, **kwargs):
        super().__init__(**kwargs)
        self.window = window


class _PublicState(_Fine):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = []


class _AddsPublicAttribute(_Fine):
    def rank(self, evidences):
        self.last = list(evidences)
        return super().rank(evidences)


class _Unseeded(_Fine):
    def score(self, evidence):
        return random.random()


class _CrashesOnEmpty(_Fine):
    def rank(self, evidences):
        return [evidences[0].user] + super().rank(evidences[1:])


class _FillsEmpty(_Fine):
    def rank(self, evidences):
        return super().rank(evidences) or ["ghost"]


class _ReadsFiles(_Fine):
    def score(self, evidence):
        with open(os.devnull) as f:
            return float(len(f.read()))


class _ScoresNothing(_Fine):
    def score(self):
        return 0.0


class _PredictsWithMore(NnlAverage):
    def predict(self, features, scale):
        return super().predict(features) * scale


class _FitReturnsNone(NnlAverage):
    def fit(self, features, y):
        super().fit(features, y)


BROKEN = [
    ("name_round_trips", "FINE", _Misnamed),
    ("name_round_trips", "TWICE", _TwiceRegistered),
    ("init_only_stores_parameters", "FINE", _ChangesParameter),
    ("init_only_stores_parameters", "FINE", _ForgetsParameter),
    ("init_only_stores_parameters", "FINE", _PublicState),
    ("keyword_only_constructor", "FINE", _PositionalArgument),
    ("init_only_stores_parameters", "FINE", _AddsPublicAttribute),
    ("deterministic", "FINE", _Unseeded),
    ("empty_input", "FINE", _CrashesOnEmpty),
    ("empty_input", "FINE", _FillsEmpty),
    ("no_io", "FINE", _ReadsFiles),
    ("fit_returns_self", "NNL-AV", _FitReturnsNone),
    ("implements_protocol", "FINE", _ScoresNothing),
    ("implements_protocol", "NNL-AV", _PredictsWithMore),
]


def _scratch(name: str, cls) -> tuple[Registry, object]:
    """A registry holding only ``cls`` (under ``name``; a second time for _TwiceRegistered), and its adapter."""
    like = OUTLINK_ESTIMATORS if issubclass(cls, NnlAverage) else adapters()[0].registry
    scratch = Registry(like.kind)
    scratch.register(name)(cls)
    if cls is _TwiceRegistered:
        scratch.register("TWICE-AGAIN")(cls)
    return scratch, with_registry(adapter_for(like), scratch)


@pytest.mark.parametrize("check, name, cls", BROKEN, ids=[f"{c}-{k.__name__}" for c, _, k in BROKEN])
def test_each_check_fails_on_a_component_broken_for_it(check, name, cls) -> None:
    registry, adapter = _scratch(name, cls)
    selected = [c for c in check_component(registry, name, adapter) if c.check == check]
    assert selected, f"no {check} check for {cls.__name__}"
    with pytest.raises(AssertionError):
        for c in selected:
            c()


@pytest.mark.parametrize("cls", [_Fine, NnlAverage], ids=["ranking", "outlink"])
def test_the_unbroken_control_passes_every_check(cls) -> None:
    registry, adapter = _scratch("NNL-AV" if cls is NnlAverage else "FINE", cls)
    for c in check_component(registry, registry.names()[0], adapter):
        c()
