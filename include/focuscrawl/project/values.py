"""Values every part of the project file shares: its constants, ``${VAR}`` interpolation, durations,
schedules, URL, name and Kafka topic checks, and the one error a project raises (:class:`ProjectError`).
"""

from __future__ import annotations

import difflib
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationInfo,
)

# DAG ids a project may schedule (tests/project checks this against dags/).
DAG_IDS = ("delta_maintenance", "fue_pseudo_training", "graph_estimation", "model_registry", "outlinks_features",
           "outlinks_train", "page_relevance", "source_schedule")


# The DAGs that tables the stream processes land start (through streaming/asset_events.py, not a
# task's outlet; tests/platform/test_dag_schedules.py checks this against the DAG files).
STREAM_DAGS = ("graph_estimation", "outlinks_features", "source_schedule")


LOOPS = ("fue", "sources", "revisits", "graph")


PRESETS = ("@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@quarterly")


EXAMPLE_FORMATS = ("erisk", "jsonl", "csv")


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$")


CONTACT = re.compile(r"(https?://\S+|[\w.+-]+@[\w-]+\.[\w.-]+|/?u/[A-Za-z0-9_-]+)")


ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


PARAM_PATTERN = re.compile(r"^[A-Za-z0-9_.\-\[\]*?]+$")  # a parameter name, shell wildcards allowed


_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")  # fullmatch: Kafka's rule for a topic name (besides "." and "..")


class ProjectError(ValueError):
    """A project file that cannot run: ``key`` is the dotted key path, the message says the fix."""

    def __init__(self, path: str | Path | None, key: str, problem: str) -> None:
        self.path = None if path is None else str(path)
        self.key = key
        self.problem = problem
        where = f"{self.path}: " if self.path else ""
        super().__init__(f"{where}{key}: {problem}")


def _builtin_vars() -> dict[str, str]:
    from focuscrawl.config import settings

    cfg = settings()
    return {"FOCUSCRAWL_DATA": str(cfg.data_dir or cfg.home.parent / "shared" / "data"),
            "FOCUSCRAWL_HOME": str(cfg.home), "FOCUSCRAWL_WORLD_URL": cfg.world_url}


def interpolate(text: str, env: dict[str, str] | None = None) -> str:
    """``${VAR}`` and ``${VAR:-default}`` replaced from ``env`` (the environment by default)."""
    env = dict(os.environ) if env is None else env
    builtins: dict[str, str] | None = None

    def one(m: re.Match) -> str:
        nonlocal builtins
        name, default = m.group(1), m.group(2)
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if builtins is None:
            builtins = _builtin_vars()
        if name in builtins:
            return builtins[name]
        raise ValueError(f"${{{name}}} is not set; export {name}=... or write ${{{name}:-default}}")

    return _VAR.sub(one, text)


def validation_context(info: ValidationInfo, key: str, default: Any) -> Any:
    return (info.context or {}).get(key, default)


def check_url(value: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a URL ({exc}); write e.g. https://example.org") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an absolute http(s) URL; write e.g. https://example.org")
    return value


def check_topic(value: str) -> str:
    if value in (".", "..") or not _TOPIC.fullmatch(value):
        raise ValueError(f"{value!r} is not a Kafka topic name; use 1 to 249 letters, digits, '.', '_' or '-' "
                         "(not \".\" or \"..\"), e.g. \"shop.clicks\"")
    return value


def check_registered(registry, name: str) -> str:
    try:
        registry.get(name)
    except KeyError:
        close = difflib.get_close_matches(name.upper(), registry.names(), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"unknown {registry.kind} {name!r}{hint}; registered: {', '.join(registry.names())} "
                         "- pick one") from None
    return name.upper()


def parse_duration(text: str) -> timedelta:
    """``"90s"``, ``"5m"``, ``"1h30m"``, ``"7d"`` -> timedelta (ValueError naming the form)."""
    m = _DURATION.match(text.strip().lower()) if isinstance(text, str) else None
    if not m or not any(m.groups()):
        raise ValueError(f"{text!r} is not a duration; write e.g. '90s', '5m', '1h30m' or '7d'")
    d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return timedelta(days=d, hours=h, minutes=mi, seconds=s)


def check_positive_duration(example: str):
    def check(cls, v: str) -> str:
        if parse_duration(v) <= timedelta(0):
            raise ValueError(f"{v!r} is not positive; write e.g. '{example}'")
        return v

    return classmethod(check)


def check_name(kind: str, example: str):
    def check(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"{v!r} is not a {kind} name; use lower-case letters, digits, '-' or '_' (e.g. \"{example}\")")
        return v

    return classmethod(check)


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def check_schedule(value: str) -> str:
    """A cron expression, an Airflow preset, a duration (``5m``), ``assets`` or ``none``."""
    v = value.strip()
    if v in ("assets", "none") or v in PRESETS:
        return v
    if v.startswith("@"):
        raise ValueError(f"unknown preset {v!r}; use one of {', '.join(PRESETS)}, a cron expression or a duration")
    if len(v.split()) == 5:
        from croniter import croniter

        if not croniter.is_valid(v):
            raise ValueError(f"{v!r} is not a valid cron expression; e.g. '*/5 * * * *'")
        return v
    try:
        parse_duration(v)
    except ValueError:
        raise ValueError(f"{v!r} is neither a cron expression ('*/5 * * * *'), a preset ('@hourly'), a duration "
                         "('5m') nor 'assets'/'none'; write one of those") from None
    return v


def airflow_schedule(value: str):
    """What a DAG's ``schedule=`` takes for a validated schedule string (``"assets"`` is returned as is:
    the DAG keeps its asset trigger)."""
    if value == "none":
        return None
    if value == "assets" or value.startswith("@") or len(value.split()) == 5:
        return value
    return parse_duration(value)
