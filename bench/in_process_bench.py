"""The outlinks_features steps on pandas in the job's own process against the same steps on Spark, in one run.

    python bench/in_process_bench.py [--rows 400,4000,20000] [--spark-rows 400,4000,20000] [--periods 10]
                                     [--out $FOCUSCRAWL_VAR/bench/in_process.json]

For each size a lake of synthetic weekly snapshots (``outlinks.synthetic.generate_snapshots``, ``rows / periods``
pages of 200 words) gets the four jobs of the ``outlinks_features`` task, embed, related, features and near
duplicates, twice: each job's ``run_in_process`` (``focuscrawl.outlinks.frame_transforms``, what a DAG task runs
below ``FOCUSCRAWL_SPARK_IN_PROCESS_MIB``) and its ``run`` on a warm local Spark session (``local[2]``, warmed by one
untimed pass on the smallest lake; the DAG tasks' warm Spark adds a Spark Connect round trip to every plan, so this
is the kinder baseline for Spark). Both are warmed once (the pandas pass pays its imports there). Recorded per size
and step: both wall times, the rows each wrote (the same), the threads, the load before and after and the commit.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from knn_bench import timed  # noqa: E402
from knn_exact_bench import ROOT, THREAD_VARS  # noqa: E402
from result_json import default_out, write_result  # noqa: E402

from focuscrawl.config import settings  # noqa: E402
from focuscrawl.experiments.run_record import git_commit  # noqa: E402

STEPS = ("outlinks_embed", "outlinks_related", "outlinks_features", "near_duplicates")


def sizes(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s.strip()]


def job(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "spark_jobs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_lake(root: Path, rows: int, periods: int):
    """A lake of its own under ``root`` with ``rows`` snapshots (``rows // periods`` pages)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from focuscrawl.outlinks.synthetic import generate_snapshots
    from focuscrawl.outlinks.tables import SNAPSHOTS

    cfg = dataclasses.replace(settings(), lake=str(root / "lake"), var_dir=root)
    snaps = generate_snapshots(n_pages=max(2, rows // periods), n_periods=periods, n_topics=10, n_sites=20,
                               words_per_page=200, seed=1)
    write_deltalake(SNAPSHOTS.path(cfg), pa.Table.from_pandas(snaps, schema=SNAPSHOTS.arrow_schema(),
                                                                 preserve_index=False), partition_by=["period"])
    return cfg, len(snaps)


def run_steps(jobs: dict, cfg, spark=None, label: str = "") -> dict:
    """Each step once, in order: ``{step: {"seconds": s, "rows": n}}`` (on Spark when ``spark`` is given)."""
    out = {}
    for name in STEPS:
        fn = (lambda: jobs[name].run(spark, cfg)) if spark is not None else (lambda: jobs[name].run_in_process(cfg))
        n, secs = timed(fn, f"{label} {name}" if label else "")
        out[name] = {"seconds": round(secs, 3), "rows": int(n)}
    out["total_seconds"] = round(sum(v["seconds"] for v in out.values()), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="400,4000,20000", help="snapshot rows per lake, comma-separated")
    ap.add_argument("--spark-rows", default=None, help="the sizes also run on Spark (default: every size; '' none)")
    ap.add_argument("--periods", type=int, default=10)
    ap.add_argument("--out", type=Path, default=default_out("in_process"))
    args = ap.parse_args(argv)
    from focuscrawl.core.blas import pin_openblas_kernels

    pin_openblas_kernels()  # as chain.py and the DAG task do, before FAISS loads
    rows = sizes(args.rows)
    on_spark = set(rows if args.spark_rows is None else sizes(args.spark_rows))
    res: dict = {"periods": args.periods, "threads": {v: os.environ.get(v, "unset") for v in THREAD_VARS},
                 "cpus": os.cpu_count(), "load_before": [round(v, 2) for v in os.getloadavg()],
                 "commit": git_commit(ROOT), "spark_master": "local[2]", "sizes": []}
    jobs = {name: job(name) for name in STEPS}
    scratch = Path(tempfile.mkdtemp(prefix="focuscrawl-in-process-"))
    spark = None
    try:
        warm_cfg, _ = make_lake(scratch / "warm", min(rows), args.periods)
        run_steps(jobs, warm_cfg)  # imports (scikit-learn, FAISS, datasketch) paid here, not by the smallest size
        if on_spark:
            from focuscrawl.lake.spark import get_session

            spark = get_session("in-process-bench", master="local[2]")
            run_steps(jobs, warm_cfg, spark)
        for n in rows:
            cfg, snapshot_rows = make_lake(scratch / f"rows-{n}", n, args.periods)
            entry = {"rows": snapshot_rows, "in_process": run_steps(jobs, cfg, label=f"{snapshot_rows} rows, pandas")}
            if n in on_spark:
                entry["spark"] = run_steps(jobs, cfg, spark, label=f"{snapshot_rows} rows, Spark")
                entry["same_rows"] = all(entry["spark"][s]["rows"] == entry["in_process"][s]["rows"] for s in STEPS)
                entry["spark_over_in_process"] = round(entry["spark"]["total_seconds"]
                                                       / entry["in_process"]["total_seconds"], 2)
            res["sizes"].append(entry)
            shutil.rmtree(scratch / f"rows-{n}", ignore_errors=True)
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    res["load_after"] = [round(v, 2) for v in os.getloadavg()]
    for r in summary(res):
        print(f"  {r['what']:<52} {r['seconds']:9.2f} s  {r['note']}")
    write_result(args.out, res)
    return 0 if all(e.get("same_rows", True) for e in res["sizes"]) else 1


def summary(res: dict) -> list[dict]:
    """Table rows (``python -m bench``'s report): per size, the four steps on pandas and, where run, on Spark."""
    rows = []
    for e in res["sizes"]:
        for where, label in (("in_process", "pandas in the job's process"), ("spark", "Spark local[2] (baseline)")):
            if where not in e:
                continue
            r = e[where]
            steps = ", ".join(f"{s.removeprefix('outlinks_')} {r[s]['seconds']:.1f} s" for s in STEPS)
            note = steps + (f"; Spark / pandas {e['spark_over_in_process']:.1f}x, same rows {e['same_rows']}"
                            if where == "spark" else "")
            rows.append({"what": f"outlinks_features steps, {label}", "n": e["rows"], "seconds": r["total_seconds"],
                         "rate": e["rows"] / r["total_seconds"], "unit": "snapshot rows/s", "recall": None,
                         "note": note})
    return rows


if __name__ == "__main__":
    sys.exit(main())
