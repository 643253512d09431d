"""Loading a project file: TOML in, a validated :class:`~focuscrawl.project.model.Project` out, and
each pydantic error turned into one message naming the key path and the fix.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ValidationError,
)

from focuscrawl.project.model import Project
from focuscrawl.project.values import ProjectError


def _loc(loc: tuple, raw: dict) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith(("function-", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _model_at(loc: tuple) -> type[BaseModel] | None:
    model: Any = Project
    for part in loc:
        if isinstance(part, int):
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return None
        ann = field.annotation
        for candidate in (ann, *getattr(ann, "__args__", ())):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                model = candidate
                break
            for inner in getattr(candidate, "__args__", ()):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    model = inner
                    break
        else:
            return None
    return model


_TYPES = {"float_type": "a number", "float_parsing": "a number", "int_type": "a whole number", "int_parsing": "a whole number",
          "int_from_float": "a whole number", "bool_type": "true or false", "bool_parsing": "true or false",
          "string_type": "a string in quotes", "dict_type": "a table", "model_type": "a table", "tuple_type": "a list",
          "list_type": "a list", "model_attributes_type": "a table"}


def _message(err: dict) -> tuple[str, str]:
    """``(key path, problem and fix)`` for one pydantic error."""
    loc = tuple(err["loc"])
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = _model_at(loc[:-1])
        known = sorted(model.model_fields) if model else []
        close = difflib.get_close_matches(key, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return _loc(loc, {}), f"unknown key{hint}; keys allowed here: {', '.join(known)} - remove or rename it"
    if kind == "missing":
        return _loc(loc, {}), f"is required; add {loc[-1]} = ..."
    if kind in _TYPES:
        return _loc(loc, {}), f"must be {_TYPES[kind]}, got {err.get('input')!r}; write {_TYPES[kind]} here"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = {"greater_than": "> {gt:g}", "greater_than_equal": ">= {ge:g}", "less_than": "< {lt:g}",
                 "less_than_equal": "<= {le:g}"}[kind].format(**ctx)
        return _loc(loc, {}), f"must be {bound}, got {err.get('input')!r}; use a value {bound}"
    if kind == "literal_error":
        return _loc(loc, {}), f"got {err.get('input')!r}; use one of {ctx.get('expected')}"
    if kind == "too_short":
        return _loc(loc, {}), "is empty; declare at least one entry"
    if kind == "value_error":
        text = str(ctx.get("error", err["msg"]))
        # Validators of a whole model may name a sub-key first ("sites: ...", "positives: ...").
        m = re.match(r"^([a-z_]+(?:\.[a-z_]+)*(?:\[[^\]]+\])?): (.*)$", text, re.S)
        if m and not m.group(1).startswith("["):
            sub, text = m.groups()
            if loc and sub not in ("loops", "sites", "target"):
                return _loc((*loc, sub), {}), text
            return sub, text
        m = re.match(r"^\[([a-z_]+)\] (.*)$", text, re.S)
        if m:
            return _loc((*loc, m.group(1)), {}), m.group(2)
        return _loc(loc, {}), text
    return _loc(loc, {}), f"{err['msg']}; fix this value"


def parse_project(raw: dict, path: str | Path | None = None, *, base_dir: Path | None = None,
                  check_files: bool = True, check_env: bool = True) -> Project:
    """Validate an already-parsed TOML document (see :func:`load_project`)."""
    context = {"base_dir": base_dir or (Path(path).resolve().parent if path else Path.cwd()),
               "check_files": check_files, "check_env": check_env}
    try:
        return Project.model_validate(raw, context=context)
    except ValidationError as exc:
        # An unknown key first (a misspelt key makes its intended value look missing; a credential
        # written in the file must be named as such), then the first fault in file order.
        errors = exc.errors()
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        key, problem = _message(first)
        raise ProjectError(path, key, problem.replace("\n", " ")) from None


def load_project(path: str | Path, *, check_files: bool = True, check_env: bool = True) -> Project:
    """Read and validate ``path``; the first fault is one :class:`ProjectError` naming key and fix."""
    path = Path(path)
    if path.is_dir():
        path = path / "focuscrawl.toml"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ProjectError(path, "(file)", "does not exist; create one with `focuscrawl init` or name the file") from None
    except PermissionError:
        raise ProjectError(path, "(file)", "is not readable by this user; fix its permissions (chmod +r)") from None
    except OSError as exc:
        raise ProjectError(path, "(file)", f"cannot be read ({exc.strerror}); name a readable TOML file") from None
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ProjectError(path, "(file)", "is not UTF-8 text; save it as UTF-8 TOML") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProjectError(path, "(file)", f"is not valid TOML ({exc}); fix the syntax there") from None
    return parse_project(raw, path, check_files=check_files, check_env=check_env)


def _declared(model: type[BaseModel], doc: dict) -> dict:
    """``doc`` (a ``model_dump``) without what the dump adds to the declared fields: its computed fields, at every
    level, and keys no field declares (``up``'s own entries beside the project's in run/project.json)."""
    out = {}
    for key, value in doc.items():
        field = model.model_fields.get(key)
        if field is None:
            continue
        for candidate in (field.annotation, *getattr(field.annotation, "__args__", ())):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                if isinstance(value, dict):
                    value = _declared(candidate, value)
                elif isinstance(value, list):
                    value = [_declared(candidate, v) if isinstance(v, dict) else v for v in value]
                break
        out[key] = value
    return out


def load_active(doc: dict) -> Project:
    """The project ``focuscrawl up`` runs, from what it wrote (run/project.json: ``Project.to_json`` and the file's
    path): the project as it was resolved then, not as its file reads now, which may have been edited since (or, in
    the tests, overridden in memory). Paths in it are absolute, environment variables named only."""
    base = Path(doc["project_file"]).parent if doc.get("project_file") else None
    return parse_project(_declared(Project, doc), doc.get("project_file"), base_dir=base, check_env=False)


__all__ = ["ProjectError", "load_active", "load_project", "parse_project"]
