"""``focuscrawl report ephemeral-focus --run DIR``: rebuild the table and plot of one run of the sources
loop on a page focus.

Reads the run's ``run.json`` (parameters) and raw rows (``runs.csv``: one row per world, seed and policy)
and writes the table and plot again with :func:`focuscrawl.experiments.ephemeral_focus.build_outputs`, the
function the experiment used.
"""

from __future__ import annotations

import sys

import pandas as pd


def _rebuild(run, out, record) -> str:
    from focuscrawl.experiments.ephemeral_focus import build_outputs

    return build_outputs(out, pd.read_csv(run / "runs.csv"), record["parameters"])


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.experiments.run_record import report_main

    return report_main(argv, "ephemeral-focus", __doc__, ["runs.csv"], _rebuild)


if __name__ == "__main__":
    sys.exit(main())
