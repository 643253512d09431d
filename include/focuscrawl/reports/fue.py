"""``focuscrawl report fue --run-id ID``: a FUE run's report rebuilt from the ``fue_extractions`` Delta table.

    focuscrawl report fue --run-id fue-1a2b3c4d [--duration 7d] [--table URI] [--out DIR]

The same files as ``focuscrawl experiment fue`` writes (seed 000, section IV-F, Figures 2-4:
harvest ratio, ratio to RND and users per hour over time, per simulated day, the paper's
verdicts), from the rows the run streamed to Delta, so a report can be redrawn, or drawn for a
run that was stopped, without running it again.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from focuscrawl.config import settings
from focuscrawl.experiments.fue import parse_duration
from focuscrawl.fue import report
from focuscrawl.fue.metrics import HOUR
from focuscrawl.fue.pipeline import STATS_TABLE
from focuscrawl.storage import storage_options


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(prog="focuscrawl report fue", description=__doc__.splitlines()[0])
    ap.add_argument("--run-id", required=True, help="the run id `focuscrawl experiment fue` printed")
    ap.add_argument("--duration", help="simulated length of the run (default: its last verdict, to the hour)")
    ap.add_argument("--table", default=STATS_TABLE.path(cfg), help="Delta table of the stats events")
    ap.add_argument("--out", type=Path, help="output folder (default $FOCUSCRAWL_VAR/reports/fue-RUN_ID)")
    args = ap.parse_args(argv)
    events = report.events_from_table(args.table, args.run_id, storage_options(cfg))
    duration = parse_duration(args.duration) if args.duration else \
        max(HOUR, math.ceil(max(e.at for e in events) / HOUR) * HOUR)
    out = args.out or Path(cfg.var_dir) / "reports" / f"fue-{args.run_id}"
    built = report.build(events, duration)
    report.write(built, out)
    print(built.markdown())
    print(f"{len(events)} extractions of run {args.run_id} over {duration / HOUR:g} simulated hours: report in {out}")
    return 0
