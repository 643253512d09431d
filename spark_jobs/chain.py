"""Spark job: several focuscrawl jobs one after another in one Spark application (one driver start for all).

    spark-submit spark_jobs/chain.py outlinks_embed.py --dimensions 100 -- outlinks_related.py --k 30 -- ...

Each step is a job of this folder with its own arguments, steps separated by ``--``. Every job's
``main`` takes its session from ``focuscrawl.lake.spark.get_session`` (``getOrCreate``), so the steps share
one driver: a cold driver spends 20-30 s starting the JVM and compiling the first queries, a warm one
runs the next step on small tables in seconds (2026-12-01, page_snapshots of the world: embed 21 s
cold, 3 s warm). A step that returns non-zero (``NOTHING_TO_DO``: its input is not ready) or raises stops the chain with that status; the steps
before it have written their tables, and each step overwrites its own, so a retry starts from the top.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def steps(argv: list[str]) -> list[tuple[str, list[str]]]:
    """``a.py --x 1 -- b.py`` -> ``[("a.py", ["--x", "1"]), ("b.py", [])]``; each step names a job of this folder."""
    if not argv:
        raise SystemExit("chain: no step; usage: chain.py JOB.py [ARGS] [-- JOB.py [ARGS] ...]")
    out: list[tuple[str, list[str]]] = []
    current: list[str] = []
    for arg in [*argv, "--"]:
        if arg != "--":
            current.append(arg)
            continue
        if not current:
            raise SystemExit("chain: an empty step (two `--` in a row, or one at an end); each step is JOB.py [ARGS]")
        job, *args = current
        if job == Path(__file__).name or not (HERE / job).is_file() or not job.endswith(".py"):
            jobs = ", ".join(sorted(p.name for p in HERE.glob("*.py") if p.name != Path(__file__).name))
            raise SystemExit(f"chain: {job!r} is not a job of {HERE}; one of: {jobs}")
        out.append((job, args))
        current = []
    return out


def load(job: str):
    spec = importlib.util.spec_from_file_location(f"focuscrawl_job_{Path(job).stem}", HERE / job)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.core.blas import pin_openblas_kernels

    plan = steps(sys.argv[1:] if argv is None else argv)
    pin_openblas_kernels()  # before the first step starts the session: its Python workers inherit the kernels
    for job, args in plan:
        began = time.monotonic()
        status = load(job).main(args) or 0
        print(f"chain: {job} {' '.join(args)} -> status {status} in {time.monotonic() - began:.1f}s", flush=True)
        if status:
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
