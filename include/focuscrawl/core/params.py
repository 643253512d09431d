"""Parameter objects: each area's knobs declared once, in one frozen dataclass.

An area (``focuscrawl.graph.params.GraphEstimationParams``, ...) declares every knob as a field made
with :func:`knob`: its default, the one-line help and the bounds a DAG Param checks. What reads a
knob is built from that field, so a default lives in one place:

- a command line: :func:`add_arguments` adds ``--name`` flags (default and help from the field) and
  :func:`from_args` turns the parsed flags back into the parameter object;
- a DAG: :func:`param_schemas` gives each field's default and JSON schema, which
  ``dags/common.dag_params`` wraps in Airflow ``Param`` s (the domain imports no Airflow), and
  :func:`cli_args` the flags that pass the Params on to the job;
- the project file and the functions take their defaults from the area's default instance.

A tuple of names (estimators, models) is one comma-separated string on a command line and in a
Param, as the registries' ``parse`` reads it.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Iterable

_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (tuple, "string"))


def knob(default: Any, help: str, **schema: Any) -> Any:
    """A parameter field: ``default``, ``help`` (a flag's help, a Param's description) and JSON-schema
    bounds for the DAG's Param (``minimum``, ``exclusiveMinimum``, ``maximum``, ``enum``, ...)."""
    return dataclasses.field(default=default, metadata={"help": help, "schema": schema})


def _fields(params: Any, names: Iterable[str] | None) -> list[dataclasses.Field]:
    by_name = {f.name: f for f in dataclasses.fields(params) if "help" in f.metadata}
    if names is None:
        return list(by_name.values())
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise KeyError(f"{type(params).__name__} has no knob {', '.join(unknown)}; knobs: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def flag(name: str) -> str:
    """The command-line flag of field ``name``: ``block_length`` -> ``--block-length``."""
    return "--" + name.replace("_", "-")


def _shown(value: Any) -> Any:
    return ",".join(value) if isinstance(value, tuple) else value


_BOUNDS = {"minimum": (lambda v, b: v >= b, ">="), "exclusiveMinimum": (lambda v, b: v > b, ">"),
           "maximum": (lambda v, b: v <= b, "<="), "exclusiveMaximum": (lambda v, b: v < b, "<")}


def _bounded(kind: type, schema: dict) -> Any:
    """``kind`` as an argparse type that also holds the knob's JSON-schema bounds, so a flag accepts what
    the DAG's Param accepts."""
    def convert(text: str) -> Any:
        value = kind(text)
        for key, (holds, sign) in _BOUNDS.items():
            if key in schema and not holds(value, schema[key]):
                raise argparse.ArgumentTypeError(f"must be {sign} {schema[key]:g} (got {text})")
        if "enum" in schema and value not in schema["enum"]:
            raise argparse.ArgumentTypeError(f"must be one of {', '.join(map(str, schema['enum']))} (got {text})")
        return value

    convert.__name__ = kind.__name__  # argparse names the type in its "invalid ... value" error
    return convert


def add_arguments(parser: argparse.ArgumentParser, params: Any, names: Iterable[str] | None = None) -> None:
    """One flag per knob of ``params`` (an instance: its values are the defaults), or of ``names`` only;
    a value outside the knob's bounds is a usage error naming them."""
    for f in _fields(params, names):
        value = getattr(params, f.name)
        shown = f"{f.metadata['help']} (default: %(default)s)"
        if isinstance(value, bool):
            parser.add_argument(flag(f.name), action=argparse.BooleanOptionalAction, default=value, help=shown)
        else:
            kind = str if isinstance(value, tuple) else type(value)
            parser.add_argument(flag(f.name), type=_bounded(kind, f.metadata["schema"]), default=_shown(value), help=shown)


def from_args(params: Any, args: argparse.Namespace, names: Iterable[str] | None = None) -> Any:
    """``params`` with the knobs (``names``: those :func:`add_arguments` added) read from the parsed
    ``args``; a comma-separated list becomes a tuple."""
    changes = {}
    for f in _fields(params, names):
        value = getattr(args, f.name)
        if isinstance(getattr(params, f.name), tuple):
            value = tuple(v.strip() for v in str(value).split(",") if v.strip())
        changes[f.name] = value
    return dataclasses.replace(params, **changes)


def param_schemas(params: Any, names: Iterable[str] | None = None,
                  bounds: dict[str, dict] | None = None) -> dict[str, tuple[Any, dict]]:
    """``{knob: (default, JSON schema with type and description)}`` of ``params``: what a DAG Param is.
    ``bounds`` adds schema bounds the caller knows and the dataclass cannot import (a registry's names)."""
    out = {}
    for f in _fields(params, names):
        value = getattr(params, f.name)
        kind = next(t for cls, t in _JSON_TYPES if isinstance(value, cls))
        out[f.name] = (_shown(value), {"type": kind, "description": f.metadata["help"], **f.metadata["schema"],
                                       **(bounds or {}).get(f.name, {})})
    return out


def cli_args(names: Iterable[str], template: str = "{{{{ params.{} }}}}") -> list[str]:
    """``["--name", "{{ params.name }}", ...]``: the flags a DAG task passes its Params on with."""
    return [part for name in names for part in (flag(name), template.format(name))]
