"""Job: the outlinks_features DAG's first step: ``NOTHING_TO_DO`` (99) while no model could use new features.

    python spark_jobs/outlinks_ready.py [--history-size N]

While the revisitor's snapshots span fewer periods than the first model trains on (``--history-size`` to look
back, one labelled by its next, one held out) and no outlink model is trained
to score with (a young crawl), the features would be computed for nothing: the step says why and exits 99, the
chain stops there and its task is skipped, and the next version of ``page_snapshots`` tries again
(``focuscrawl.outlinks.training.features_of_no_use``). It reads the table's ``period`` column with delta-rs: no
Spark job.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import settings
from focuscrawl.core.params import add_arguments
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.outlinks.tables import SNAPSHOTS
from focuscrawl.outlinks.training import features_of_no_use, model_store


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import NOTHING_TO_DO

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, ("history_size",))
    args = ap.parse_args(argv)
    cfg = settings()
    periods = lake.to_pandas(SNAPSHOTS, cfg, columns=["period"])["period"].nunique() if lake.exists(SNAPSHOTS, cfg) else 0
    why = features_of_no_use(periods, args.history_size, model_store(cfg))
    if why is not None:
        print(f"outlinks_ready: no features computed yet: {why}")
        return NOTHING_TO_DO
    print(f"outlinks_ready: {periods} period(s) of snapshots: features are computed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
