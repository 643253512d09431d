"""Status files: what a running stream process last did, for operators, the demo and tests.

Each process (crawler, revisitor, source crawler, FUE stages) rewrites one small JSON document;
readers poll it. Kept here so every process writes it the same safe way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_status(path: Path, status: dict) -> None:
    """Replace the status file atomically (readers never see half a JSON document)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(status))
    os.replace(tmp, path)


def read_status(path: Path) -> dict:
    """The last status a process wrote; empty when it has written none yet."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
