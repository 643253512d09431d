"""Issue 21, point 1: every method name a default mentions resolves through its registry.

Defaults live in DAG Params, the project file (the loop models' defaults, every ``projects/*.toml``
and the ``focuscrawl init`` template), the command lines (argparse defaults of every ``main`` in the
product and the benchmarks) and the functions behind them (parameter defaults). Each place is read as the program reads it (DAGs
parsed with BundleDagBag, parsers captured from ``main``), and every key that names components must
be in the table of its place, so a new Param, key or flag naming a method is checked too.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import tomllib
from pathlib import Path

from helpers import load_module, main_parser

from focuscrawl.ephemeral.schedulers import SCHEDULERS
from focuscrawl.fue.methods import RANKING_METHODS
from focuscrawl.fue.params import DEFAULT as FUE
from focuscrawl.fue.pipeline import COMMUNITY_CHOOSERS
from focuscrawl.graph.estimators import ESTIMATORS as GRAPH_ESTIMATORS
from focuscrawl.graph.samplers import SAMPLERS
from focuscrawl.outlinks.models import ESTIMATORS as OUTLINK_ESTIMATORS, model_specs
from focuscrawl.outlinks.params import DEFAULT as OUTLINKS
from focuscrawl.outlinks.related import RELATED
from focuscrawl.project.model import Loops
from focuscrawl.project.template import INIT_TEMPLATE
from focuscrawl.relevance.models import PAGE_MODELS

ROOT = Path(__file__).resolve().parents[1]
# A key (Param, project key, argparse dest) that looks like it names components.
NAMES_COMPONENTS = re.compile(r"^(.*_)?(method|model|estimator|sampler|scheduler|related|chooser)s?$")


def _model_spec(name: str):
    specs = model_specs()
    if name not in specs:
        raise KeyError(f"unknown outlink model spec {name!r}; known: {', '.join(specs)}")
    return OUTLINK_ESTIMATORS.get(specs[name].estimator)


RESOLVE = {
    "ranking method": RANKING_METHODS.get, "community chooser": COMMUNITY_CHOOSERS.get, "scheduler": SCHEDULERS.get,
    "graph sampler": SAMPLERS.get, "graph estimator": GRAPH_ESTIMATORS.get, "outlink estimator": OUTLINK_ESTIMATORS.get,
    "related-pages method": RELATED.get, "outlink model spec": _model_spec, "page relevance model": PAGE_MODELS.get,
}

DAG_PARAMS = {
    ("fue_pseudo_training", "methods"): "ranking method",
    ("graph_estimation", "estimators"): "graph estimator",
    ("outlinks_features", "method"): "related-pages method",
    ("outlinks_train", "models"): "outlink model spec",
    ("outlinks_train", "score_model"): "outlink model spec",
}
PROJECT_KEYS = {
    ("fue", "method"): "ranking method",
    ("fue", "community_chooser"): "community chooser", ("sources", "scheduler"): "scheduler",
    ("revisits", "model"): "outlink estimator", ("revisits", "related"): "related-pages method",
    ("graph", "sampler"): "graph sampler", ("graph", "estimators"): "graph estimator",
}
CLI_FLAGS = {
    ("bench/latency_bench.py", "method"): "ranking method",
    ("bench/scaling_bench.py", "method"): "ranking method",
    ("bench/train_bench.py", "models"): "outlink model spec",
    ("focuscrawl.experiments.ephemeral", "schedulers"): "scheduler",
    ("focuscrawl.experiments.fue", "methods"): "ranking method",
    ("focuscrawl.experiments.fue", "community_chooser"): "community chooser",
    ("focuscrawl.experiments.graph_estimation", "samplers"): "graph sampler",
    ("focuscrawl.experiments.graph_estimation", "estimators"): "graph estimator",
    ("focuscrawl.experiments.page_relevance", "models"): "page relevance model",
    ("focuscrawl.experiments.outlinks_relevant", "models"): "outlink model spec",
    ("focuscrawl.experiments.outlinks_relevant", "judges"): "page relevance model",
    ("streaming/revisitor.py", "relevance_model"): "page relevance model",
    ("streaming/source_crawler.py", "relevance_model"): "page relevance model",
    ("streaming/graph_sampler.py", "relevance_model"): "page relevance model",
    ("spark_jobs/outlinks_features.py", "relevance_model"): "page relevance model",
    ("spark_jobs/graph_estimation.py", "estimators"): "graph estimator",
    ("spark_jobs/outlinks_related.py", "method"): "related-pages method",
    ("spark_jobs/outlinks_score.py", "model"): "outlink model spec",
    ("spark_jobs/outlinks_score.py", "models"): "outlink model spec",
    ("spark_jobs/outlinks_train.py", "models"): "outlink model spec",
    ("streaming/fue/explorer.py", "community_chooser"): "community chooser",
    ("streaming/graph_sampler.py", "sampler"): "graph sampler",
}
CONSTANTS = [("focuscrawl.outlinks.params.OutlinksParams.models", OUTLINKS.models, "outlink model spec"),
             ("focuscrawl.outlinks.params.OutlinksParams.score_model", OUTLINKS.score_model, "outlink model spec"),
             ("focuscrawl.outlinks.params.OutlinksParams.method", OUTLINKS.method, "related-pages method"),
             ("focuscrawl.fue.params.FueParams.pseudo_methods", FUE.pseudo_methods, "ranking method"),
             ("focuscrawl.fue.params.FueParams.method", FUE.method, "ranking method"),
             ("focuscrawl.fue.params.FueParams.community_chooser", FUE.community_chooser, "community chooser")]


def _names(value) -> list[str]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(v).strip() for v in items if str(v).strip()]


def _unresolved(found: dict, table: dict, stale: bool = True) -> list[str]:
    """Names of ``found`` ((place, key) -> value) that do not resolve; keys naming components not in ``table``;
    with ``stale``, entries of ``table`` not found."""
    bad = [f"{place}: {key} is not in this test's table (add which registry it names)"
           for place, key in found if (place, key) not in table and NAMES_COMPONENTS.match(key)]
    bad += [f"{where}: in the table but no longer found" for where in table if stale and where not in found]
    for where, value in found.items():
        if where in table:
            for name in _names(value):
                try:
                    RESOLVE[table[where]](name)
                except KeyError as exc:
                    bad.append(f"{where}: {exc}")
    return bad


# -- DAG Params -------------------------------------------------------------------------------


def _dag_params(dags: dict) -> dict:
    return {(dag_id, key): value for dag_id, dag in dags.items() for key, value in dag.params.dump().items()}


def test_every_dag_param_naming_components_resolves(dag_bag) -> None:
    found = _dag_params(dag_bag())
    assert ("outlinks_train", "score_model") in found  # the DAGs were read
    assert _unresolved(found, DAG_PARAMS) == []


# -- the project file -------------------------------------------------------------------------


def test_every_project_default_naming_components_resolves() -> None:
    defaults = Loops().model_dump()
    places = {"the loop models' defaults": defaults, "focuscrawl init": tomllib.loads(INIT_TEMPLATE)["loops"]}
    places |= {str(p.relative_to(ROOT)): tomllib.loads(p.read_text())["loops"] for p in sorted(ROOT.glob("projects/*.toml"))}
    bad = []
    for place, loops in places.items():
        found = {(loop, key): value for loop, table in loops.items() for key, value in table.items()}
        bad += [f"{place}: {b}" for b in _unresolved(found, PROJECT_KEYS, stale=place == "the loop models' defaults")]
    assert bad == []


# -- command lines ----------------------------------------------------------------------------


PRODUCT = ("include/focuscrawl", "dags", "streaming", "spark_jobs", "bench")


def _module(path: Path) -> tuple[str, object]:
    """(place, module) of a file of the product: a dotted name under include/, else its path."""
    inside = path.is_relative_to(ROOT / "include")
    place = ".".join(path.relative_to(ROOT / "include").with_suffix("").parts) if inside else str(path.relative_to(ROOT))
    return place, load_module(path)


@functools.lru_cache(maxsize=1)
def _sources() -> tuple[tuple[Path, str, ast.Module], ...]:
    """(path, text, syntax tree) of every Python file of the product and the benchmarks."""
    return tuple((path, path.read_text(), ast.parse(path.read_text()))
                 for top in PRODUCT for path in sorted((ROOT / top).rglob("*.py")))


def _entry_points() -> list[tuple[str, object]]:
    """(place, module) of every module of the product or the benchmarks whose ``main`` parses arguments."""
    return [_module(path) for path, text, tree in _sources() if ("argparse" in text or "parser(" in text)
            and any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)]


def _actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)
        else:
            yield action


def _cli_defaults() -> tuple[dict, list[str]]:
    found, unreached = {}, []
    for place, module in _entry_points():
        parser = main_parser(module.main)
        if parser is None:
            unreached.append(place)
            continue
        for action in _actions(parser):
            if action.default not in (None, argparse.SUPPRESS) and isinstance(action.default, (str, list, tuple)):
                found[(place, action.dest)] = action.default
    return found, unreached


def test_every_cli_default_naming_components_resolves() -> None:
    found, unreached = _cli_defaults()
    assert unreached == [], f"these mains parsed no arguments before returning: {unreached}"
    assert ("spark_jobs/outlinks_score.py", "model") in found
    assert _unresolved(found, CLI_FLAGS) == []


def _signature_defaults() -> dict:
    """(place, function, parameter) -> default of every parameter with a default that names components."""
    found = {}
    for path, _, tree in _sources():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = fn.args.posonlyargs + fn.args.args
            pairs = list(zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults))
            pairs += [(a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None]
            for arg, default in pairs:
                if not NAMES_COMPONENTS.match(arg.arg) or (isinstance(default, ast.Constant) and default.value is None):
                    continue
                place, module = _module(path)
                value = default.value if isinstance(default, ast.Constant) else eval(ast.unparse(default), vars(module))
                found[(f"{place}:{fn.name}", arg.arg)] = value
    return found


SIGNATURE_DEFAULTS = {
    ("focuscrawl.outlinks.spark_transforms:related", "method"): "related-pages method",
    ("focuscrawl.outlinks.frame_transforms:related", "method"): "related-pages method",
    ("spark_jobs/outlinks_related.py:run_in_process", "method"): "related-pages method",
    ("focuscrawl.outlinks.training:train_and_register", "models"): "outlink model spec",
    ("focuscrawl.outlinks.training:promote_latest", "models"): "outlink model spec",
    ("focuscrawl.outlinks.experiment:prepare", "related_method"): "related-pages method",
    ("focuscrawl.outlinks.related:related_pages", "method"): "related-pages method",
    ("spark_jobs/outlinks_train.py:run", "models"): "outlink model spec",
    ("spark_jobs/outlinks_score.py:run", "model"): "outlink model spec",
    ("spark_jobs/outlinks_related.py:run", "method"): "related-pages method",
}


def test_every_signature_default_naming_components_resolves() -> None:
    assert _unresolved(_signature_defaults(), SIGNATURE_DEFAULTS) == []


def test_named_constants_resolve() -> None:
    bad = []
    for where, value, kind in CONSTANTS:
        for name in _names(value):
            try:
                RESOLVE[kind](name)
            except KeyError as exc:
                bad.append(f"{where}: {exc}")
    assert bad == []
    for name, spec in model_specs().items():
        OUTLINK_ESTIMATORS.get(spec.estimator)  # every spec's estimator is registered
        assert spec.name == name


def test_an_unknown_name_or_an_unlisted_key_is_reported() -> None:
    table = {("dag", "method"): "ranking method"}
    assert _unresolved({("dag", "method"): "HCP,HPC"}, table) == [
        "('dag', 'method'): \"unknown ranking method 'HPC'; known ranking methods: "
        + ", ".join(RANKING_METHODS.names()) + '"']
    assert _unresolved({("dag", "method"): "HCP", ("dag", "score_model"): "X"}, table) == [
        "dag: score_model is not in this test's table (add which registry it names)"]
    assert _unresolved({("dag", "model"): "NNL-XX"}, {("dag", "model"): "outlink model spec"})[0].startswith(
        "('dag', 'model'): \"unknown outlink model spec 'NNL-XX'")
