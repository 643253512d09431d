"""Status files: what a running stream process last did, for operators, the demo and tests.

Each process (crawler, revisitor, source crawler, FUE stages) rewrites one small JSON document;
readers poll it. Kept here so every process writes it the same safe way.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_status(path: Path, status: dict) -> None:
    """Replace the status file atomically (readers never see half a JSON document).

    The temporary file is this writer's own: two processes left on one status path (two consumers
    with the default ``--status-file``) used to share ``NAME.tmp``, and the slower one's rename
    failed with FileNotFoundError and ended the process (seen in the fault suite)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(status))
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide it from other readers; it holds no secret
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_status(path: Path) -> dict:
    """The last status a process wrote; empty when it has written none yet."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
