"""Spark job: warm a started warm Spark in the jobs' session (``focuscrawl.services.spark_connect.SparkConnect.warm``).

    SPARK_REMOTE=sc://localhost:PORT/;token=...;session_id=... python spark_jobs/warm_up.py

Every Python worker of the session imports what the jobs' functions need (the modules their pickled functions and
objects name), and the driver writes and reads a small Delta table (``$FOCUSCRAWL_VAR/spark-connect/warm-up``):
what the loops' first runs paid for otherwise (the first features task of a loaded live run: 134 s, against 55 s
for its second).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from focuscrawl.config import settings


def import_the_jobs_modules(batches):
    """A ``mapInPandas`` function: the worker imports the jobs' modules and says which worker it is and how long it took."""
    import os

    import pandas as pd

    began = time.monotonic()
    import focuscrawl.ephemeral.estimate  # noqa: F401 - the sources loop's estimates
    import focuscrawl.ephemeral.feedback  # noqa: F401
    import focuscrawl.outlinks.spark_transforms  # noqa: F401 - embeddings (scikit-learn), features, near duplicates
    from focuscrawl.core.blas import load_faiss

    load_faiss()  # the related pages' index
    took = time.monotonic() - began
    for batch in batches:
        yield pd.DataFrame({"id": batch["id"], "pid": [os.getpid()] * len(batch), "import_s": [took] * len(batch)})


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import get_session, parallelism

    began = time.monotonic()
    cfg = settings()
    spark = get_session("warm_up", cfg=cfg)
    workers = parallelism(spark)
    table = str(Path(cfg.var_dir) / "spark-connect" / "warm-up")
    (spark.range(workers, numPartitions=workers)
     .mapInPandas(import_the_jobs_modules, "id long, pid long, import_s double")
     .write.format("delta").mode("overwrite").save(table))
    done = spark.read.format("delta").load(table).toPandas()
    print(f"warm-up: Python workers {sorted(set(done['pid'].tolist()))} imported the jobs' modules (at most "
          f"{done['import_s'].max():.1f}s), a Delta table written and read, in {time.monotonic() - began:.1f}s",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
