"""The example users (and pages) a profile declares, read from eRisk XML, JSONL or CSV files.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationInfo,
)

from focuscrawl.core.corpora import erisk_subjects, jsonl_objects, writing_body
from focuscrawl.project.values import (
    EXAMPLE_FORMATS,
    check_url,
    interpolate,
    validation_context,
)


def infer_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".jsonl") or name.endswith(".ndjson"):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    if path.is_dir() or name.endswith((".xml", ".tar.xz", ".tar.gz", ".tgz", ".tar")):
        return "erisk"
    raise ValueError(f"cannot tell the format of {path.name!r}; add format = \"erisk\", \"jsonl\" or \"csv\"")


def _user_of(row: dict) -> str | None:
    for key in ("user", "author", "id", "username"):
        if row.get(key) not in (None, ""):
            return str(row[key])
    return None


def _text_of(row: dict) -> str:
    if row.get("text"):
        return str(row["text"])
    return "\n".join(str(row[k]) for k in ("title", "selftext", "body") if row.get(k)).strip()


def erisk_users(path: Path, label: bool | None, limit: int | None = None) -> dict[str, dict[str, list[str]]]:
    """Each role's users -> writings of an eRisk collection (``focuscrawl.core.corpora.erisk_subjects``), in one
    pass: a subject labelled by its folder belongs to its role, an unlabelled one to both."""
    users: dict[str, dict[str, list[str]]] = {"positives": {}, "negatives": {}}
    for subject in erisk_subjects(path, label):
        bodies = [writing_body(title, text) for title, text, _ in subject.writings]
        for role in ("positives", "negatives"):
            if subject.label is None or subject.label == (role == "positives"):
                users[role][subject.id] = bodies
        if limit and max(map(len, users.values())) >= limit:
            break
    return users


def read_examples(path: str | Path, fmt: str, role: str = "positives", limit: int | None = None) -> dict[str, list[str]]:
    """Example users -> their writings, from eRisk XML, JSONL (``{"user", "text"}`` per line; ``author``,
    ``title``/``selftext`` also read) or CSV (a header with ``user``/``author`` and ``text`` or
    ``title``/``selftext``). ValueError names the line and the fix. ``limit`` stops after that many users."""
    path = Path(path)
    users: dict[str, list[str]] = {}
    if fmt == "erisk":
        users = erisk_users(path, role == "positives", limit)[role]
    elif fmt == "jsonl":
        for n, row in jsonl_objects(path, '{"user", "text"}'):
            user = _user_of(row)
            if user is None:
                raise ValueError(f"line {n} of {path.name} has no \"user\" (or \"author\"); "
                                 "write {\"user\": ..., \"text\": ...} per line")
            users.setdefault(user, []).append(_text_of(row))
            if limit and len(users) > limit:
                users.pop(user)
                break
    elif fmt == "csv":
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            header = set(reader.fieldnames or ())
            if not header & {"user", "author", "id", "username"} or not header & {"text", "title", "selftext", "body"}:
                raise ValueError(f"{path.name}'s header {sorted(header)} needs a user (or author) column and a "
                                 "text (or title/selftext) column")
            for row in reader:
                user = _user_of(row)
                if user is not None:
                    users.setdefault(user, []).append(_text_of(row))
                    if limit and len(users) >= limit:
                        break
    else:
        raise ValueError(f"unknown example format {fmt!r}; use one of {', '.join(EXAMPLE_FORMATS)}")
    if not users:
        raise ValueError(f"{path} holds no example users")
    return users


def examples_path(value: Any, info: ValidationInfo) -> Any:
    if value is None:
        return None
    if not isinstance(value, str):
        return value
    path = Path(interpolate(value)).expanduser()
    if not path.is_absolute():
        path = Path(validation_context(info, "base_dir", Path.cwd())) / path
    if not path.exists():
        raise ValueError(f"{path} does not exist; point at your example users' file or folder")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{path} is not readable by this user; fix its permissions (chmod +r)")
    return str(path)


def page_entries(value: Any, info: ValidationInfo) -> Any:
    """Example page entries: URLs kept (``${VAR}`` replaced), paths made absolute from the project's folder."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return value
    out = []
    for entry in value:
        if not isinstance(entry, str):
            out.append(entry)
            continue
        entry = interpolate(entry)
        if entry.lower().startswith(("http://", "https://")):
            out.append(check_url(entry))
            continue
        path = Path(entry).expanduser()
        out.append(str(path if path.is_absolute() else Path(validation_context(info, "base_dir", Path.cwd())) / path))
    return tuple(out)
