"""One contract for every registered component (scikit-learn's ``check_estimator`` idea).

``check_component(registry, name)`` yields the checks one registered name must pass, each a
:class:`Check` whose call raises ``AssertionError`` on a breach:

- ``implements_protocol``: the class has every method of its registry's protocol (a ``typing.Protocol``,
  one idiom for every registry) with the protocol's parameters, and every attribute it declares;
- ``name_round_trips``: the registry gives the class back for the name in any case, ``parse`` keeps it,
  the class is registered under no other name, and a ``name`` attribute (ranking methods) agrees;
- ``init_only_stores_parameters``: every constructor argument is kept unchanged under its own name, and
  ``__init__`` sets no other public attribute (state a component keeps ends in ``_`` or starts with it);
  running the component changes no parameter and adds no public attribute without a trailing ``_``;
- ``keyword_only_constructor``: every constructor argument is keyword-only, so ``registry.create(name,
  **kwargs)`` is the one way to build any of them;
- ``deterministic``: two components built with the same seed give the same output on the same input;
- ``empty_input``: the empty input gives an empty output (``None`` or length 0) or a ``ValueError``;
- ``no_io``: building and running it opens no file, socket or process;
- ``fit_returns_self`` (only where there is a ``fit``).

What "the input" is differs by kind: an :class:`Adapter` per registry says how to build a component
(``kwargs``), run it on a tiny input (``run``), on an empty one (``empty``) and fit it (``fit``).
:data:`ADAPTERS` holds one for every registry of the product; ``tests/test_component_contract.py``
runs every check over every registered name, so a new name fails the suite unless it passes.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import io
import os
import socket
import subprocess
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Callable, Iterator

import numpy as np

from focuscrawl.core.registry import Registry


@dataclass(frozen=True)
class Adapter:
    """How to exercise one kind of component on a tiny input.

    ``kwargs(name, seed)``: constructor arguments; ``run(component, seed)``: the output on the tiny
    input (compared between two builds); ``empty(component)``: the outputs on empty input, each of which
    must be empty, built with ``empty_kwargs`` over ``kwargs`` (a scheduler of no sources);
    ``fit(component)``: what ``fit`` returned, or None when the kind has no ``fit``; ``variants``: extra
    constructor arguments every check is repeated with (e.g. each target); ``protocol``: what every class
    of the registry implements (a ``typing.Protocol``).
    """

    registry: Registry
    protocol: type
    kwargs: Callable[[str, int], dict]
    run: Callable[[Any, int], Any]
    empty: Callable[[Any], list]
    fit: Callable[[Any], Any] | None = None
    empty_kwargs: dict = field(default_factory=dict)
    variants: tuple[dict, ...] = ({},)


@dataclass(frozen=True)
class Check:
    """One contract check of one registered name; ``check()`` raises AssertionError on a breach."""

    registry: Registry
    name: str
    check: str
    variant: dict = field(default_factory=dict)
    call: Callable[[], None] = field(default=lambda: None, compare=False, repr=False)

    @property
    def id(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.variant.items())
        return f"{self.registry.kind}:{self.name}:{self.check}" + (f"[{extra}]" if extra else "")

    def __call__(self) -> None:
        self.call()


def check_component(registry: Registry, name: str, adapter: Adapter | None = None) -> Iterator[Check]:
    """The contract checks of ``name`` in ``registry`` (lazy: nothing is built until a check runs)."""
    adapter = adapter or adapter_for(registry)
    checks: list[tuple[str, Callable]] = [
        ("init_only_stores_parameters", _check_init_only_stores_parameters),
        ("keyword_only_constructor", _check_keyword_only_constructor),
        ("deterministic", _check_deterministic),
        ("empty_input", _check_empty_input),
        ("no_io", _check_no_io),
    ]
    if adapter.fit is not None:
        checks.append(("fit_returns_self", _check_fit_returns_self))
    yield Check(registry, name, "name_round_trips", call=lambda: _check_name_round_trips(registry, name))
    yield Check(registry, name, "implements_protocol", call=lambda: _check_implements_protocol(adapter, name))
    for variant in adapter.variants:
        for check, fn in checks:
            yield Check(registry, name, check, variant, call=lambda fn=fn, v=variant: fn(adapter, name, v))


def adapter_for(registry: Registry) -> Adapter:
    for adapter in adapters():
        if adapter.registry is registry:
            return adapter
    raise KeyError(f"no contract adapter for the {registry.kind} registry: add one to focuscrawl.testing.adapters()")


def all_checks() -> list[Check]:
    """Every check of every registered name of every registry."""
    return [c for a in adapters() for name in a.registry.names() for c in check_component(a.registry, name, a)]


# -- the checks -------------------------------------------------------------------------------


def _build(adapter: Adapter, name: str, variant: dict, seed: int = 7):
    return adapter.registry.create(name, **_arguments(adapter, name, variant, seed))


def _arguments(adapter: Adapter, name: str, variant: dict, seed: int) -> dict:
    return {**adapter.kwargs(name, seed), **variant}


def _check_name_round_trips(registry: Registry, name: str) -> None:
    cls = registry.get(name)
    assert name in registry.names(), f"{name!r} is not among {registry.names()}"
    assert registry.get(name.lower()) is cls, f"{name!r} in lower case gives another class"
    assert registry.parse(f" {name.lower()} ") == [name], f"parse({name!r}) != [{name!r}]"
    others = [n for n in registry.names() if n != name and registry.get(n) is cls]
    assert not others, f"{cls.__name__} is registered as {name!r} and as {others}: one name per class"
    own = getattr(cls, "name", None)
    assert not isinstance(own, str) or own.upper() == name, f"{cls.__name__}.name is {own!r}, registered as {name!r}"


def _check_implements_protocol(adapter: Adapter, name: str) -> None:
    cls, protocol = adapter.registry.get(name), adapter.protocol
    assert getattr(protocol, "_is_protocol", False), f"{name}: declare {protocol.__name__} as a typing.Protocol"
    component = _build(adapter, name, adapter.variants[0])
    for member, declared in vars(protocol).items():
        if member.startswith("_"):
            continue
        assert hasattr(cls, member), f"{name}: {cls.__name__} lacks {protocol.__name__}.{member}"
        if callable(declared):
            want = [p for p in inspect.signature(declared).parameters if p != "self"]
            params = inspect.signature(getattr(cls, member)).parameters
            have = [p for p in params if p != "self"]
            required = [p for p in have if params[p].default is params[p].empty
                        and params[p].kind not in (params[p].VAR_POSITIONAL, params[p].VAR_KEYWORD)]
            assert have[:len(want)] == want and set(required) <= set(want), (
                f"{name}: {cls.__name__}.{member}{tuple(have)} does not take {protocol.__name__}.{member}{tuple(want)}")
    missing = [a for a in getattr(protocol, "__annotations__", {}) if not hasattr(component, a)]
    assert not missing, f"{name}: {cls.__name__} instances lack {missing}, declared by {protocol.__name__}"


def _init_parameters(cls) -> list[str]:
    """Named constructor parameters, through ``**kwargs`` passed on to a base class."""
    names: list[str] = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        params = inspect.signature(vars(klass)["__init__"]).parameters.values()
        names += [p.name for p in params if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return list(dict.fromkeys(names))


def _check_keyword_only_constructor(adapter: Adapter, name: str, variant: dict) -> None:
    cls = adapter.registry.get(name)
    positional = [p.name for k in cls.__mro__ if "__init__" in vars(k) and k is not object
                  for p in inspect.signature(vars(k)["__init__"]).parameters.values()
                  if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert not positional, f"{name}: constructor arguments {sorted(set(positional))} can be given by position (put * first)"


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a is b or a == b


def _public(obj) -> set[str]:
    return {k for k in vars(obj) if not k.startswith("_")}


def _check_init_only_stores_parameters(adapter: Adapter, name: str, variant: dict) -> None:
    cls = adapter.registry.get(name)
    given = _arguments(adapter, name, variant, seed=7)
    component = cls(**given)
    params = _init_parameters(cls)
    signature = {p: v.default for k in reversed(cls.__mro__) if "__init__" in vars(k) and k is not object
                 for p, v in inspect.signature(vars(k)["__init__"]).parameters.items()}
    for p in params:
        assert hasattr(component, p), f"{name}: __init__ takes {p!r} but does not store it as self.{p}"
        want = given.get(p, signature.get(p))
        assert _equal(getattr(component, p), want), f"{name}: self.{p} is {getattr(component, p)!r}, given {want!r}"
    extra = sorted(a for a in _public(component) - set(params) if not a.endswith("_"))
    assert not extra, f"{name}: __init__ sets public attributes {extra} that are not parameters (name state x_ or _x)"
    before = _public(component)
    adapter.run(component, 7)
    for p in params:
        want = given.get(p, signature.get(p))
        assert _equal(getattr(component, p), want), f"{name}: running it changed self.{p} to {getattr(component, p)!r}"
    added = sorted(a for a in _public(component) - before if not a.endswith("_"))
    assert not added, f"{name}: running it added public attributes {added} (learned state ends in _)"


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f")
    return a == b


def _check_deterministic(adapter: Adapter, name: str, variant: dict) -> None:
    first = adapter.run(_build(adapter, name, variant, seed=3), 3)
    again = adapter.run(_build(adapter, name, variant, seed=3), 3)
    assert _same(first, again), f"{name}: two builds with seed 3 disagree on the same input:\n{first!r}\n{again!r}"


def _check_empty_input(adapter: Adapter, name: str, variant: dict) -> None:
    component = _build(adapter, name, {**variant, **adapter.empty_kwargs})
    try:
        outputs = adapter.empty(component)
    except ValueError as exc:
        assert str(exc).strip(), f"{name}: empty input raised a ValueError without a message"
        return
    except Exception as exc:
        raise AssertionError(f"{name}: empty input raised {type(exc).__name__}: {exc} "
                             "(return an empty output or raise a ValueError that says what is missing)") from exc
    for out in outputs:
        assert out is None or len(out) == 0, f"{name}: empty input gave a non-empty output {out!r}"


class _IODone(AssertionError):
    pass


@contextlib.contextmanager
def refuse_io(what: str) -> Iterator[None]:
    """Within the block, opening a file, a socket or a process raises AssertionError naming ``what``."""

    def refuse(*args, **kwargs):
        raise _IODone(f"{what} did I/O: {args[:1]!r}")

    targets = [(builtins, "open"), (io, "open"), (os, "open"), (socket, "socket"), (socket, "create_connection"),
               (subprocess, "Popen")]
    saved = [(mod, attr, getattr(mod, attr)) for mod, attr in targets]
    try:
        for mod, attr in targets:
            setattr(mod, attr, refuse)
        yield
    finally:
        for mod, attr, value in saved:
            setattr(mod, attr, value)


def _check_no_io(adapter: Adapter, name: str, variant: dict) -> None:
    adapter.run(_build(adapter, name, variant), 7)  # first use imports lazily (which reads files): not counted
    with refuse_io(name):
        adapter.run(_build(adapter, name, variant), 7)


def _check_fit_returns_self(adapter: Adapter, name: str, variant: dict) -> None:
    component = _build(adapter, name, variant)
    returned = adapter.fit(component)
    assert returned is component, f"{name}: fit returned {returned!r}, not the component itself"


# -- the adapters: a tiny input per kind ------------------------------------------------------


def _takes(cls, arg: str) -> bool:
    return arg in _init_parameters(cls)


def _seeded(registry: Registry, name: str, seed: int, **kwargs) -> dict:
    """``kwargs``, with ``seed`` for a component that takes one."""
    return {**kwargs, "seed": seed} if _takes(registry.get(name), "seed") else kwargs


TARGET_WORDS = "depressed hopeless lonely insomnia therapy worthless crying numb".split()
OTHER_WORDS = "football recipe guitar election camera garden weekend concert".split()


def toy_corpus() -> tuple[list[str], list[int]]:
    """Each document: two words of its class and one of the other, so no word alone separates them."""
    import random

    rng = random.Random(0)
    docs, labels = [], []
    for _ in range(60):
        for label, own, other in ((1, TARGET_WORDS, OTHER_WORDS), (0, OTHER_WORDS, TARGET_WORDS)):
            docs.append(" ".join(rng.sample(own, 2) + [rng.choice(other)]))
            labels.append(label)
    return docs, labels


@lru_cache(maxsize=1)
def toy_classifier():
    """A tiny candidate classifier fitted on :func:`toy_corpus` (what the FUE tests score with)."""
    from focuscrawl.fue.classifier import UserClassifier

    return UserClassifier(min_df=1, stop_words=None, C=10.0).fit(*toy_corpus())


def toy_candidates() -> list:
    """Five candidate users: two with target words, three without, one of them with nothing seen yet."""
    from focuscrawl.fue.evidence import UserEvidence

    return [
        UserEvidence("u0", 3, 10.0, 2.0, 5.5, 5.5, "football guitar", ("sports",)),
        UserEvidence("u1", 1, -2.0, 40.0, 23.0, 23.0, "depressed lonely insomnia", ("depression",)),
        UserEvidence("u2", 2, 150.0, 0.0, 12.0, 12.0, "recipe garden", ("food",)),
        UserEvidence("u3", 5, 1.0, 7.0, 18.5, 18.5, "hopeless therapy", ("depression", "sports")),
        UserEvidence("u4"),  # nothing seen yet
    ]


def _ranking_adapter() -> Adapter:
    from focuscrawl.fue.evidence import UserEvidence
    from focuscrawl.fue.methods import RANKING_METHODS, RankingMethod

    candidates = toy_candidates()

    def run(method, seed):
        ranked = method.rank(candidates)
        method.observe(candidates[1], True)
        return ranked, method.score_many(candidates), method.rank(candidates)

    def empty(method):
        return [method.rank([]), method.score_many([]), method.pick([[] for _ in method.components()], UserEvidence)]

    return Adapter(RANKING_METHODS, RankingMethod, lambda name, seed: {"classifier": toy_classifier(), "seed": seed}, run, empty)


def _community_adapter() -> Adapter:
    from focuscrawl.fue.pipeline import COMMUNITY_CHOOSERS, CommunityChooser

    communities = ["depression", "food", "sports", "art", "music"]
    return Adapter(COMMUNITY_CHOOSERS, CommunityChooser, lambda name, seed: {"seed": seed},
                   run=lambda chooser, seed: [chooser.next(communities) for _ in range(12)],
                   empty=lambda chooser: [chooser.next([])])


def _estimates(n: int):
    import pandas as pd

    rng = np.random.default_rng(0)
    lam = rng.uniform(0.001, 0.01, n)
    return pd.DataFrame({"source_url": [f"https://s{i}.test/" for i in range(n)], "lam": lam, "lam_sd": lam / 4,
                         "P": rng.uniform(0.5, 2.0, n), "P_sd": np.full(n, 0.1), "mu": rng.uniform(1e-4, 1e-3, n),
                         "mu_sd": np.full(n, 1e-5)})


def _scheduler_adapter() -> Adapter:
    from focuscrawl.ephemeral.schedulers import SCHEDULERS, CrawlPolicy

    n = 3

    def run(policy, seed):
        policy.fit(_estimates(n))
        actions, page = [], 0
        for slot in range(60):
            now = 10.0 * slot
            if policy.knows_creation and slot % 3 == 0:
                policy.created(slot % n, page, now)
                page += 1
            action = policy.next_action(now)
            actions.append(action)
            if action is not None and action.kind == "recrawl":
                found = list(range(page, page + 2))
                page += 2
                policy.discovered(action.source, found, now, 10.0)
        return actions

    def empty(policy):
        policy.fit(_estimates(0))
        return [policy.next_action(10.0)]

    return Adapter(SCHEDULERS, CrawlPolicy, lambda name, seed: {"budget": 0.2, "max_rate": np.full(n, 0.05)}, run, empty,
                   fit=lambda policy: policy.fit(_estimates(n)), empty_kwargs={"max_rate": np.array([])})


@lru_cache(maxsize=1)
def _tiny_graph():
    from focuscrawl.graph.access import InMemoryGraph

    # A triangle 0-1-2 with a tail 2-3-4; vertex 2 holds two copies, vertex 4 one.
    edges = np.array([[0, 1], [1, 2], [0, 2], [2, 3], [3, 4]])
    return InMemoryGraph.build(5, edges, copy_vertex=np.array([2, 4, 2, 0]), copy_content=np.array([0, 0, 1, 2]),
                               content_label=np.array(["a", "b", "a"]))


def _sample(budget: int, seed: int):
    from focuscrawl.graph.samplers import SAMPLERS

    rng = np.random.default_rng(seed)
    return SAMPLERS.create("UNI").sample(_tiny_graph().access(budget=budget, rng=rng), rng)


def _sampler_adapter() -> Adapter:
    from focuscrawl.graph.samplers import SAMPLERS, GraphSampler

    def run(sampler, seed, budget=40):
        rng = np.random.default_rng(seed)
        s = sampler.sample(_tiny_graph().access(budget=budget, rng=rng), rng)
        return [s.vertices, s.weights, s.copy_ptr, s.copies.content_id]

    return Adapter(SAMPLERS, GraphSampler, lambda name, seed: {}, run, empty=lambda sampler: [run(sampler, 0, budget=0)[0]])


def _graph_estimator_adapter() -> Adapter:
    from focuscrawl.graph.access import ContentCopies
    from focuscrawl.graph.estimators import ESTIMATORS, TARGETS, ContentEstimator
    from focuscrawl.graph.samplers import Sample

    def empty(estimator):
        nothing = Sample(np.array([3]), np.array([1.0]), np.array([0, 0]), ContentCopies.from_rows([]), uniform=True,
                         num_vertices=10)
        return [estimator.estimate(nothing)]

    return Adapter(ESTIMATORS, ContentEstimator, lambda name, seed: {}, run=lambda est, seed: est.estimate(_sample(30, seed)), empty=empty,
                   variants=tuple({"target": t} for t in TARGETS))


def _features(n: int):
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"nnl_int_av": rng.poisson(2.0, n).astype(float), "nnl_int_lag1": rng.poisson(2.0, n).astype(float),
                          "ccr": rng.uniform(0, 1, n), "x": rng.normal(size=n)})
    y = rng.poisson(1.0 + frame["nnl_int_av"].to_numpy())
    return frame, y.astype(float)


def _outlink_adapter() -> Adapter:
    from focuscrawl.outlinks.models import ESTIMATORS, Predictor

    def run(model, seed):
        x, y = _features(40)
        return model.fit(x, y).predict(x)

    def empty(model):
        x, y = _features(0)
        return [model.fit(x, y).predict(x)]

    return Adapter(ESTIMATORS, Predictor, lambda name, seed: {"seed": seed, "n_estimators": 5}, run, empty,
                   fit=lambda model: model.fit(*_features(40)))


def _vectors(n: int, d: int = 8) -> np.ndarray:
    return np.random.default_rng(1).normal(size=(n, d)).astype(np.float32)


def _related_adapter() -> Adapter:
    from focuscrawl.outlinks.related import RELATED, RelatedPages

    def run(method, seed):
        method.fit(_vectors(60))
        return method.search(_vectors(60)[:10], query_ids=np.arange(10))

    def empty(method):
        method.fit(_vectors(0))
        return [method.search(_vectors(0))[0]]

    return Adapter(RELATED, RelatedPages, lambda name, seed: _seeded(RELATED, name, seed, k=4), run, empty,
                   fit=lambda method: method.fit(_vectors(60)))


def _page_relevance_adapter() -> Adapter:
    from focuscrawl.relevance.models import PAGE_MODELS, PageRelevanceModel

    docs, labels = toy_corpus()

    def run(model, seed):
        return model.fit(docs, labels).predict_proba(docs[:10] + ["", "guitar"])

    return Adapter(PAGE_MODELS, PageRelevanceModel, lambda name, seed: {"seed": seed}, run,
                   empty=lambda model: [model.fit(docs, labels).predict_proba([]), model.fit([], [])],
                   fit=lambda model: model.fit(docs, labels))


def _signal_rows(n: int):
    """``n`` landed rows of both profit signals' tables at once: clicks and the pages' relevance."""
    import pandas as pd

    rng = np.random.default_rng(2)
    published = pd.to_datetime(1_700_000_000 + np.arange(n) * 600, unit="s", utc=True)
    fetched = published + pd.to_timedelta(rng.uniform(0, 7200, n), unit="s")
    return pd.DataFrame({"source_url": [f"https://s{i % 3}.test/" for i in range(n)],
                         "page_url": [f"https://s{i % 3}.test/p{i // 2}" for i in range(n)],
                         "created_at": published, "published_at": published.where(np.arange(n) % 4 > 0),
                         "fetched_at": fetched, "counted_from": fetched,
                         "observed_at": fetched + pd.to_timedelta(3600, unit="s"),
                         "clicks": rng.poisson(3.0, n), "relevance": rng.uniform(0, 1, n)})


def _profit_signal_adapter() -> Adapter:
    from focuscrawl.ephemeral.feedback import PROFIT_SIGNALS, ProfitSignal

    def kwargs(name, seed):
        return {"half_life_s": 3600.0} if name == "RELEVANCE" else {}

    return Adapter(PROFIT_SIGNALS, ProfitSignal, kwargs,
                   run=lambda signal, seed: [signal.observations(_signal_rows(12)).to_numpy(), signal.mu_grid()],
                   empty=lambda signal: [signal.observations(_signal_rows(0))])


@lru_cache(maxsize=1)
def adapters() -> tuple[Adapter, ...]:
    """One adapter for every registry of the product."""
    return (_ranking_adapter(), _community_adapter(), _scheduler_adapter(), _sampler_adapter(),
            _graph_estimator_adapter(), _outlink_adapter(), _related_adapter(), _page_relevance_adapter(),
            _profit_signal_adapter())


def with_registry(adapter: Adapter, registry: Registry) -> Adapter:
    """``adapter`` for another registry of the same kind (tests of the checks register broken components)."""
    return replace(adapter, registry=registry)
