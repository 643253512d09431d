"""``focuscrawl report ephemeral --run DIR``: rebuild the seed-001 tables and plots of one run.

Reads the run's ``run.json`` (parameters) and raw rows (``runs.csv``: one row per world, seed and
scheduler; ``curves.csv``) and writes the tables and plots again with
:func:`focuscrawl.experiments.ephemeral.build_outputs`, the function the experiment used.
"""

from __future__ import annotations

import sys

import pandas as pd


def _rebuild(run, out, record) -> str:
    from focuscrawl.experiments.ephemeral import build_outputs

    return build_outputs(out, pd.read_csv(run / "runs.csv"), pd.read_csv(run / "curves.csv"), record["parameters"])


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.experiments.run_record import report_main

    return report_main(argv, "ephemeral", __doc__, ["runs.csv", "curves.csv"], _rebuild)


if __name__ == "__main__":
    sys.exit(main())
