"""``focuscrawl report outlinks-relevant --run DIR``: rebuild the tables of a ``focuscrawl experiment
outlinks-relevant`` run (revisits trained on new relevant outlinks against new outlinks) from its
``run.json``, raw rows and judges' figures."""

from __future__ import annotations

import sys

import pandas as pd

NAME = "outlinks-relevant"
INPUTS = ["revisits.csv.gz", "judges.csv"]


def _rebuild(run, out, record) -> str:
    from focuscrawl.experiments.outlinks_relevant import build_outputs

    return build_outputs(out, pd.read_csv(run / INPUTS[0]), pd.read_csv(run / INPUTS[1]), record["parameters"])


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.experiments.run_record import report_main

    return report_main(sys.argv[1:] if argv is None else list(argv), NAME, __doc__, INPUTS, _rebuild)


if __name__ == "__main__":
    sys.exit(main())
