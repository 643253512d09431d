"""Issue 21, point 2: each area's knobs have their defaults in one frozen parameter object.

For every area, the DAG's Params, the command lines' flags, the project file's loop defaults and the
functions' parameter defaults are read as the program reads them (DAGs parsed, parsers captured
from ``main``, the pydantic models and the signatures) and must equal the parameter object's
values. And none of those places may write a knob's default as a literal again (a flag's
``default=0.025``, a Param's ``Param(200, ...)``, a parameter's ``top_n=50_000``): they name the
object's field, so a repeated literal fails here before it can drift.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
from dataclasses import dataclass

import pytest
from helpers import ROOT, load_module, main_parser

from focuscrawl.core import dedup
from focuscrawl.ephemeral import params as ephemeral
from focuscrawl.fue import params as fue
from focuscrawl.graph import params as graph
from focuscrawl.outlinks import params as outlinks
from focuscrawl.core.params import add_arguments, cli_args, from_args, knob, param_schemas
from focuscrawl.project.model import Loops
from focuscrawl.project.values import parse_duration


@dataclass(frozen=True)
class Area:
    default: object
    dags: tuple[tuple[str, str, tuple[str, ...]], ...]  # (DAG file, dag id, knobs its Params are)
    clis: tuple[tuple[str, tuple[str, ...]], ...]       # (file whose main parses flags, knobs it takes)
    loop: tuple[str, dict[str, str]] | None             # ([loops.<name>], {its key: the knob})
    functions: tuple[str, ...]                          # files whose functions and classes may default a knob
    aliases: dict[str, str] = dataclasses.field(default_factory=dict)  # a flag's or parameter's name: the knob


def _knob(area: Area, name: str) -> str:
    return area.aliases.get(name, name)


AREAS = {
    "graph estimation (seed 003)": Area(
        graph.DEFAULT,
        dags=(("graph_estimation.py", "graph_estimation", graph.ESTIMATION),),
        clis=(("spark_jobs/graph_estimation.py", graph.ESTIMATION), ("streaming/graph_sampler.py", graph.SAMPLER_KNOBS)),
        loop=("graph", {k: k for k in (*graph.SAMPLING, "estimators")}),
        functions=("spark_jobs/graph_estimation.py", "streaming/graph_sampler.py", "include/focuscrawl/graph/tables.py"),
    ),
    "outlinks (seed 002)": Area(
        outlinks.DEFAULT,
        dags=(("outlinks.py", "outlinks_features", ("dimensions", *outlinks.RELATED_KNOBS, *outlinks.FEATURE_KNOBS)),
              ("outlinks.py", "outlinks_train", (*outlinks.TRAIN_KNOBS, "score_model", "score_scope"))),
        clis=(("spark_jobs/outlinks_embed.py", outlinks.EMBED_KNOBS), ("spark_jobs/outlinks_related.py", outlinks.RELATED_KNOBS),
              ("spark_jobs/outlinks_features.py", outlinks.FEATURE_KNOBS), ("spark_jobs/outlinks_train.py", outlinks.TRAIN_KNOBS),
              ("spark_jobs/outlinks_score.py", ("models", "model", "scope")), ("bench/scaling_bench.py", ("dimensions", "k"))),
        loop=("revisits", {"related": "method"}),
        functions=("spark_jobs/outlinks_embed.py", "spark_jobs/outlinks_related.py", "spark_jobs/outlinks_features.py",
                   "spark_jobs/outlinks_train.py", "spark_jobs/outlinks_score.py", "include/focuscrawl/outlinks/related.py",
                   "include/focuscrawl/outlinks/spark_transforms.py", "include/focuscrawl/outlinks/training.py",
                   "include/focuscrawl/outlinks/experiment.py", "include/focuscrawl/outlinks/store.py",
                   "include/focuscrawl/outlinks/embedding.py"),
        aliases={"model": "score_model", "scope": "score_scope", "related_method": "method"},
    ),
    "sources (seed 001)": Area(
        ephemeral.DEFAULT,
        dags=(("source_schedule.py", "source_schedule", ephemeral.SCHEDULE_KNOBS),),
        clis=(("spark_jobs/source_schedule.py", ephemeral.SCHEDULE_KNOBS), ("streaming/source_crawler.py", ephemeral.CRAWL_KNOBS),
              ("include/focuscrawl/experiments/ephemeral.py", ("budget",))),
        loop=("sources", {"scheduler": "scheduler", "fetches_per_second": "budget"}),
        functions=("spark_jobs/source_schedule.py", "include/focuscrawl/ephemeral/tables.py",
                   "include/focuscrawl/ephemeral/schedulers.py", "include/focuscrawl/ephemeral/crawler.py"),
    ),
    # Near-duplicate detection (issue 20): the outlinks_features DAG names its one Param near_duplicate_threshold
    # (test_the_near_duplicate_param_is_the_parameter_objects below).
    "near duplicates (issue 20)": Area(
        dedup.DEFAULT,
        dags=(),
        clis=(("spark_jobs/near_duplicates.py", dedup.KNOBS),),
        loop=None,
        functions=("spark_jobs/near_duplicates.py",),
    ),
    # The DAG's `methods` Param is the active project's variants (tests/platform/test_dag_schedules.py).
    "FUE (seed 000)": Area(
        fue.DEFAULT,
        dags=(("fue_pseudo_training.py", "fue_pseudo_training", fue.PSEUDO_TRAINING_KNOBS),),
        clis=(("streaming/fue/explorer.py", ("community_chooser", "listing_path", "interval", "front_page_interval")),
              ("streaming/fue/extractor.py", fue.EXTRACT_KNOBS),
              ("include/focuscrawl/experiments/fue.py", ("community_chooser", "pseudo_every"))),
        loop=("fue", {"method": "method", "community_chooser": "community_chooser", "listing_path": "listing_path",
                      "visit_interval": "visit_interval", "front_page_interval": "front_page_interval",
                      "users_per_hour": "users_per_hour"}),
        functions=("include/focuscrawl/fue/pseudo.py", "include/focuscrawl/fue/batch.py",
                   "include/focuscrawl/experiments/fue.py", "include/focuscrawl/fue/classifier.py",
                   "include/focuscrawl/fue/pipeline.py"),
        aliases={"pseudo_top": "top_n", "threshold": "reference_threshold", "interval": "visit_interval"},
    ),
}


def _same(default, value) -> bool:
    """A default equal to the knob as the object, a flag or a Param holds it; a duration also in seconds."""
    if default in (value, ",".join(value) if isinstance(value, tuple) else value):
        return True
    return isinstance(value, str) and isinstance(default, float) and default == parse_duration(value).total_seconds()


def _flag_defaults(parser: argparse.ArgumentParser) -> dict:
    """Every flag's default by its dest, subcommands' flags included."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _flag_defaults(sub)
        else:
            found[action.dest] = action.default
    return found


def _shown(area: Area) -> dict:
    """Each knob as a flag or a Param shows it (tuples comma-separated)."""
    return {name: default for name, (default, _) in param_schemas(area.default).items()}


@pytest.mark.parametrize("name", AREAS)
def test_dag_params_default_to_the_parameter_object(name, dag_bag) -> None:
    area = AREAS[name]
    for dag_file, dag_id, knobs in area.dags:
        params = dag_bag(dag_file)[dag_id].params.dump()
        assert {k: params[k] for k in knobs} == {k: _shown(area)[k] for k in knobs}, dag_file


@pytest.mark.parametrize("name", AREAS)
def test_flags_default_to_the_parameter_object(name) -> None:
    area = AREAS[name]
    for path, knobs in area.clis:
        parser = main_parser(load_module(ROOT / path).main)
        assert parser is not None, f"{path}: main parsed no arguments"
        defaults = _flag_defaults(parser)
        assert {k: defaults.get(k) for k in knobs} == {k: _shown(area)[_knob(area, k)] for k in knobs}, path


@pytest.mark.parametrize("name", [n for n, a in AREAS.items() if a.loop])
def test_project_loop_defaults_are_the_parameter_object(name) -> None:
    area = AREAS[name]
    loop, keys = area.loop
    defaults = getattr(Loops(), loop)
    assert {k: getattr(defaults, k) for k in keys} == {k: getattr(area.default, knob) for k, knob in keys.items()}


@pytest.mark.parametrize("name", AREAS)
def test_function_defaults_are_the_parameter_object(name) -> None:
    """A parameter of a function or class named like a knob defaults to the knob's value (or has none);
    one taking the whole object defaults to the area's default object."""
    area = AREAS[name]
    values = {f.name: getattr(area.default, f.name) for f in dataclasses.fields(area.default)}
    bad = []
    for path in area.functions:
        module = load_module(ROOT / path)
        for fn_name, fn in inspect.getmembers(module, lambda m: inspect.isfunction(m) or inspect.isclass(m)):
            if fn.__module__ != module.__name__ or (inspect.isclass(fn) and issubclass(fn, BaseException)):
                continue  # an exception takes its message, no knob
            for p in inspect.signature(fn).parameters.values():
                knob = _knob(area, p.name)
                if p.default is inspect.Parameter.empty or p.default is None or p.default == "":  # no value
                    continue
                if isinstance(p.default, type(area.default)) and p.default != area.default:
                    bad.append(f"{path}:{fn_name}({p.name}) is not the area's default object")
                elif knob in values and not _same(p.default, values[knob]):
                    bad.append(f"{path}:{fn_name}({p.name}={p.default!r}), the knob is {values[knob]!r}")
    assert bad == []


def _literal(node: ast.AST | None) -> bool:
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and all(_literal(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    return isinstance(node, ast.Constant) and node.value not in (None, "") and not isinstance(node.value, bool)


def _literal_defaults(path: str, keys: dict[str, str], classes: set[str] | None = None) -> list[str]:
    """Places in ``path`` that write a knob's default as a literal: a parameter's default, a flag's
    ``default=``, a DAG ``Param(...)`` under the knob's name, a class field (of ``classes`` only, when
    given); ``keys``: name -> knob."""
    tree = ast.parse((ROOT / path).read_text())
    found = []

    def hit(name: str | None, value: ast.AST | None, node: ast.AST) -> None:
        if name in keys and _literal(value):
            found.append(f"{path}:{node.lineno} {name} = {ast.unparse(value)}")

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.posonlyargs + node.args.args
            for arg, default in [*zip(args[len(args) - len(node.args.defaults):], node.args.defaults),
                                 *zip(node.args.kwonlyargs, node.args.kw_defaults)]:
                hit(arg.arg, default, node)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument" and node.args:
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
            kw = {k.arg: k.value for k in node.keywords}
            dest = kw["dest"].value if isinstance(kw.get("dest"), ast.Constant) else (
                flags[0][2:].replace("-", "_") if flags else None)
            hit(dest, kw.get("default"), node)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if (isinstance(key, ast.Constant) and isinstance(value, ast.Call)
                        and getattr(value.func, "id", None) == "Param" and value.args):
                    hit(key.value, value.args[0], node)
        elif isinstance(node, ast.ClassDef) and (classes is None or node.name in classes):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    value = stmt.value.args[0] if (isinstance(stmt.value, ast.Call) and stmt.value.args
                                                   and getattr(stmt.value.func, "id", None) == "Field") else stmt.value
                    hit(stmt.target.id, value, stmt)
    return found


# Every random draw has its own seed, 0 by default: the name alone does not say which knob it is.
GENERIC = {"seed"}


def _literals(area: Area) -> list[str]:
    """A function's file is read for every knob; a command line's or a DAG's for the knobs it takes."""
    knobs = {f.name: f.name for f in dataclasses.fields(area.default) if f.name not in GENERIC}
    knobs |= {alias: knob for alias, knob in area.aliases.items() if knob in knobs}
    taken: dict[str, set[str]] = {path: set(knobs) for path in area.functions}
    for path, names in [*area.clis, *((f"dags/{dag_file}", names) for dag_file, _, names in area.dags)]:
        taken.setdefault(path, set()).update(names)
    found = [hit for path in sorted(taken)
             for hit in _literal_defaults(path, {k: v for k, v in knobs.items() if k in taken[path]})]
    if area.loop:
        loop, keys = area.loop
        found += _literal_defaults("include/focuscrawl/project/model.py", keys, {type(getattr(Loops(), loop)).__name__})
    return found


@pytest.mark.parametrize("name", AREAS)
def test_no_knob_default_is_written_again_as_a_literal(name) -> None:
    assert _literals(AREAS[name]) == []


def test_every_knob_has_help_and_a_default() -> None:
    for name, area in AREAS.items():
        assert dataclasses.is_dataclass(area.default) and area.default.__dataclass_params__.frozen, name
        for f in dataclasses.fields(area.default):
            assert f.metadata.get("help"), f"{name}: {f.name} has no help"


# -- the helpers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Example:
    count: int = knob(3, "how many", minimum=1)
    rate: float = knob(0.5, "a share", exclusiveMinimum=0)
    names: tuple[str, ...] = knob(("A", "B"), "comma-separated names")
    on: bool = knob(False, "a switch")


def test_flags_round_trip_into_the_object() -> None:
    ap = argparse.ArgumentParser()
    add_arguments(ap, _Example())
    assert from_args(_Example(), ap.parse_args([])) == _Example()
    got = from_args(_Example(), ap.parse_args(["--count", "7", "--rate", "0.25", "--names", "X, Y", "--on"]))
    assert got == _Example(count=7, rate=0.25, names=("X", "Y"), on=True)
    only = argparse.ArgumentParser()
    add_arguments(only, _Example(), ["count"])
    assert from_args(_Example(), only.parse_args(["--count", "2"]), ["count"]) == _Example(count=2)
    with pytest.raises(KeyError, match="no knob nope"):
        add_arguments(only, _Example(), ["nope"])


@pytest.mark.parametrize("argv, error", [(["--count", "0"], "--count: must be >= 1 (got 0)"),
                                          (["--rate", "0"], "--rate: must be > 0 (got 0)"),
                                          (["--rate", "x"], "--rate: invalid float value: 'x'")])
def test_a_flag_holds_its_knobs_bounds_as_the_dags_param_does(argv, error, capsys) -> None:
    ap = argparse.ArgumentParser()
    add_arguments(ap, _Example())
    with pytest.raises(SystemExit) as exit:
        ap.parse_args(argv)
    assert exit.value.code == 2 and error in capsys.readouterr().err
    assert from_args(_Example(), ap.parse_args(["--count", "1", "--rate", "1e-9"])).rate == 1e-9


def test_param_schemas_and_cli_args() -> None:
    assert param_schemas(_Example()) == {
        "count": (3, {"type": "integer", "description": "how many", "minimum": 1}),
        "rate": (0.5, {"type": "number", "description": "a share", "exclusiveMinimum": 0}),
        "names": ("A,B", {"type": "string", "description": "comma-separated names"}),
        "on": (False, {"type": "boolean", "description": "a switch"}),
    }
    assert cli_args(["count", "names"]) == ["--count", "{{ params.count }}", "--names", "{{ params.names }}"]



def test_the_near_duplicate_param_is_the_parameter_objects(dag_bag) -> None:
    param = dag_bag("outlinks.py")["outlinks_features"].params.get_param("near_duplicate_threshold")
    default, schema = param_schemas(dedup.DEFAULT, ("threshold",))["threshold"]
    description = schema.pop("description")
    assert (param.value, param.description, param.schema) == (default, description, schema) and schema["maximum"] == 1
