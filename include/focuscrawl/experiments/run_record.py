"""``run.json``: what an experiment run was, so that ``focuscrawl report NAME`` can rebuild its tables.

Every ``focuscrawl experiment NAME`` run writes one ``run.json`` beside its outputs
(docs/benchmarks.md, run records): the experiment's name, its parameters (the parsed command line), the seeds it drew
from, the versions of the data it read (for a file: size, modification time and SHA-1; for a
folder: the same over its files' names and sizes), the git commit of the code and whether the
tree had uncommitted changes, and the UTC time. The report reads it back with
:func:`read_run_json` and recomputes the tables from the raw rows the run wrote beside it.

A run whose output is under a ``bench/results/`` folder publishes its numbers, so it must name
code anyone can check out: :func:`refuse_unpublishable` stops it at the start when the tree has
uncommitted changes, unless it is declared a draft (``--draft``, recorded as ``"draft": true``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

RUN_JSON = "run.json"


def git_commit(cwd: Path | None = None) -> dict:
    """``{"commit": sha or None, "dirty": bool or None, "dirty_files": tracked files modified, or None}`` of the
    checkout holding this code."""
    here = Path(cwd or Path(__file__).resolve().parent)
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True,
                                text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None, "dirty_files": None}
    return {"commit": sha, "dirty": bool(status.strip()), "dirty_files": len(status.strip().splitlines())}


RESULTS_FOLDER = ("bench", "results")


def publishes(out_dir: Path) -> bool:
    """Whether ``out_dir`` lies in a ``bench/results`` folder (the committed, published results)."""
    parts = Path(out_dir).resolve().parts
    n = len(RESULTS_FOLDER)
    return any(parts[i:i + n] == RESULTS_FOLDER for i in range(len(parts) - n + 1))


def refuse_unpublishable(out_dir: Path, code: dict, draft: bool, out_flag: str = "--output") -> None:
    """Stop a run that would publish (write under ``bench/results/``) from a tree with uncommitted
    changes or of unknown commit, unless it is a draft; called before the run spends its time.
    ``out_flag``: the caller's flag for the output folder, named in the error."""
    if draft or not publishes(out_dir):
        return
    if code.get("commit") is None or code.get("dirty") is not False:
        state = "has uncommitted changes" if code.get("dirty") else "is not a git checkout"
        raise SystemExit(f"refusing to write {out_dir}: the code's tree {state}, so the results under bench/results "
                         "would name no commit anyone can check out. Commit first, or pass --draft to mark the run a draft "
                         f"(recorded in run.json), or write elsewhere with {out_flag}")


def start_run(out_dir: Path, draft: bool, out_flag: str = "--output") -> dict:
    """What every experiment does before it spends its time: take the code it loaded (:func:`git_commit`),
    stop if it would publish from a dirty tree (:func:`refuse_unpublishable`) and make its folder.
    Returns the code, for :func:`write_run_json`."""
    code = git_commit()
    refuse_unpublishable(out_dir, code, draft, out_flag)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    return code


def add_draft_argument(parser) -> None:
    """``--draft``: allow writing under ``bench/results/`` from a dirty tree; the record says ``draft: true``."""
    parser.add_argument("--draft", action="store_true",
                        help="a draft run: may write under bench/results from a tree with uncommitted changes "
                             "(refused otherwise); run.json records draft: true")


def data_version(path: Path) -> dict:
    """A version of a data file or folder good enough to tell two inputs apart."""
    path = Path(path)
    if not path.exists():
        return {"path": str(path), "exists": False}
    if path.is_file():
        digest = hashlib.sha1()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return {"path": str(path), "bytes": path.stat().st_size, "sha1": digest.hexdigest()}
    files = sorted(p for p in path.rglob("*") if p.is_file())
    listing = hashlib.sha1("\n".join(f"{p.relative_to(path)}\t{p.stat().st_size}" for p in files).encode())
    return {"path": str(path), "files": len(files), "bytes": sum(p.stat().st_size for p in files), "listing_sha1": listing.hexdigest()}


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def write_run_json(out_dir: Path, name: str, parameters: dict, seeds: list[int] | dict, data: dict[str, Path] | None = None,
                   code: dict | None = None, draft: bool = False, **extra: Any) -> Path:
    """Write ``out_dir/run.json`` for experiment ``name``; ``extra`` keys are stored as given (e.g. outputs).

    ``code``: :func:`git_commit` as the run started. A long run rewrites its record at every checkpoint,
    and the checkout may have moved on since: asked then, git names code the run never loaded.
    ``draft``: the run was declared a draft (:func:`refuse_unpublishable`)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "experiment": name,
        "parameters": _plain(parameters),
        "seeds": _plain(seeds),
        "data": {k: data_version(v) for k, v in (data or {}).items()},
        "code": code or git_commit(),
        "draft": bool(draft),
        "written_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        **_plain(extra),
    }
    path = out_dir / RUN_JSON
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def read_run_json(path: Path, expect: str | None = None) -> dict:
    """The record at ``path`` (a ``run.json`` or the folder holding one); ``expect`` checks its experiment name."""
    path = Path(path)
    if path.is_dir():
        path = path / RUN_JSON
    if not path.is_file():
        raise SystemExit(f"no {RUN_JSON} at {path}: pass the output folder of a `focuscrawl experiment ...` run")
    record = json.loads(path.read_text())
    if expect is not None and record.get("experiment") != expect:
        raise SystemExit(f"{path} is a run of {record.get('experiment')!r}, not {expect!r}: pass that experiment's output folder")
    return record


def report_main(argv: list[str] | None, name: str, doc: str, inputs: list[str], rebuild) -> int:
    """The ``focuscrawl report NAME --run DIR [--out DIR]`` of an experiment: read ``run.json``, check
    the raw files ``inputs`` are there, and call ``rebuild(run_dir, out_dir, record) -> printed text``."""
    from focuscrawl.core.commandline import parser

    p = parser(f"focuscrawl report {name}", doc, f"focuscrawl report {name} --run $FOCUSCRAWL_VAR/experiments/{name}",
               f"focuscrawl report {name} --run /tmp/{name} --out /tmp/{name}-again")
    p.add_argument("--run", type=Path, required=True, help=f"output folder of a `focuscrawl experiment {name}` run")
    p.add_argument("--out", type=Path, help="where to write (default: the run's folder)")
    args = p.parse_args(argv)
    record = read_run_json(args.run, expect=name)
    missing = [n for n in inputs if not (args.run / n).is_file()]
    if missing:
        raise SystemExit(f"{args.run} lacks {', '.join(missing)}: re-run the experiment with --output {args.run}")
    out = args.out or args.run
    out.mkdir(parents=True, exist_ok=True)
    print(rebuild(args.run, out, record))
    return 0
