"""Issue 21, point 2: each area's knobs have their defaults in one frozen parameter object.

For every area, the DAG's Params, the command lines' flags, the project file's loop defaults and the
functions' parameter defaults are read as the program reads them (DAGs parsed, parsers captured
from ``main``, the pydantic models and the signatures) and must equal the parameter object's
values: a literal repeated in one of those places fails here once it drifts, and a knob not listed
here is caught by its own area's table.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from dataclasses import dataclass

import pytest
from helpers import ROOT, load_module, main_parser

from focuscrawl.graph import params as graph
from focuscrawl.params import add_arguments, cli_args, from_args, knob, param_schemas
from focuscrawl.project import Loops


@dataclass(frozen=True)
class Area:
    default: object
    dags: tuple[tuple[str, str, tuple[str, ...]], ...]  # (DAG file, dag id, knobs its Params are)
    clis: tuple[tuple[str, tuple[str, ...]], ...]       # (file whose main parses flags, knobs it takes)
    loop: tuple[str, tuple[str, ...]] | None            # ([loops.<name>], knobs it has)
    functions: tuple[str, ...]                          # files whose functions may default a knob


AREAS = {
    "graph estimation (seed 003)": Area(
        graph.DEFAULT,
        dags=(("graph_estimation.py", "graph_estimation", graph.ESTIMATION),),
        clis=(("spark_jobs/graph_estimation.py", graph.ESTIMATION), ("streaming/graph_sampler.py", graph.SAMPLING)),
        loop=("graph", (*graph.SAMPLING, "estimators")),
        functions=("spark_jobs/graph_estimation.py", "streaming/graph_sampler.py", "include/focuscrawl/graph/tables.py"),
    ),
}


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
        assert {k: parser.get_default(k) for k in knobs} == {k: _shown(area)[k] for k in knobs}, path


@pytest.mark.parametrize("name", [n for n, a in AREAS.items() if a.loop])
def test_project_loop_defaults_are_the_parameter_object(name) -> None:
    area = AREAS[name]
    loop, knobs = area.loop
    defaults = getattr(Loops(), loop)
    assert {k: getattr(defaults, k) for k in knobs} == {k: getattr(area.default, k) for k in knobs}


@pytest.mark.parametrize("name", AREAS)
def test_function_defaults_are_the_parameter_object(name) -> None:
    """A function parameter named like a knob defaults to the knob's value (or has none); one taking
    the whole object defaults to the area's default object."""
    area = AREAS[name]
    values = {f.name: getattr(area.default, f.name) for f in dataclasses.fields(area.default)}
    bad = []
    for path in area.functions:
        module = load_module(ROOT / path)
        for fn_name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__:
                continue
            for p in inspect.signature(fn).parameters.values():
                if p.default is inspect.Parameter.empty or p.default is None:
                    continue
                if isinstance(p.default, type(area.default)) and p.default != area.default:
                    bad.append(f"{path}:{fn_name}({p.name}) is not the area's default object")
                elif p.name in values and p.default != values[p.name] and p.default != _shown(area)[p.name]:
                    bad.append(f"{path}:{fn_name}({p.name}={p.default!r}), the knob is {values[p.name]!r}")
    assert bad == []


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


def test_param_schemas_and_cli_args() -> None:
    assert param_schemas(_Example()) == {
        "count": (3, {"type": "integer", "description": "how many", "minimum": 1}),
        "rate": (0.5, {"type": "number", "description": "a share", "exclusiveMinimum": 0}),
        "names": ("A,B", {"type": "string", "description": "comma-separated names"}),
        "on": (False, {"type": "boolean", "description": "a switch"}),
    }
    assert cli_args(["count", "names"]) == ["--count", "{{ params.count }}", "--names", "{{ params.names }}"]

