"""``focuscrawl report graph-estimation --run DIR``: rebuild the seed-003 tables and plots of one run.

Reads the run's ``run.json`` (its parameters) and the raw rows it wrote (``estimates.csv.gz``: every
crawl's estimate; ``truth.csv``), and writes the tables and plots again with
:func:`focuscrawl.experiments.graph_estimation.build_outputs`, the function the experiment itself
used: the same inputs give the same files (to ``--out``, default the run's folder).
"""

from __future__ import annotations

import sys

import pandas as pd


def _rebuild(run, out, record) -> str:
    from focuscrawl.experiments.graph_estimation import build_outputs

    estimates = pd.read_csv(run / "estimates.csv.gz", dtype={"value": str})
    truth = pd.read_csv(run / "truth.csv", dtype={"value": str})
    return build_outputs(out, estimates, truth, record["parameters"])


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.experiments.run_record import report_main

    return report_main(argv, "graph-estimation", __doc__, ["estimates.csv.gz", "truth.csv"], _rebuild)


if __name__ == "__main__":
    sys.exit(main())
