"""Where a benchmark's run ends: its result as one JSON file (``--out``), which ``python -m bench`` collects.

A bench imports it from beside itself (``from result_json import write_result``), as it imports
its other neighbours: ``python bench/<name>.py`` has ``bench/`` on its path, not the checkout.
"""

from __future__ import annotations

import json
from pathlib import Path


def default_out(name: str) -> Path:
    """Where a bench run on its own writes: ``$FOCUSCRAWL_VAR/bench/<name>.json``. Only ``python -m bench``
    writes the published ``bench/results/<mode>/<name>.json`` (``--out``), from a clean tree, with its
    commit and load: a result written there by hand would be a number without a run record."""
    from focuscrawl.config import settings

    return Path(settings().var_dir) / "bench" / f"{name}.json"


def write_result(path: Path, result: dict, *, echo: bool = False) -> Path:
    """``result`` as JSON at ``path`` (folders made); then the whole result on stdout with ``echo``
    (the benches whose log shows it all), else where it went."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2) + "\n"
    path.write_text(text)
    if echo:
        print(text, end="")
    else:
        print(f"written to {path}")
    return path
