"""``focuscrawl report fue --run DIR | --run-id ID``: a FUE run's report rebuilt from the Delta rows.

    focuscrawl report fue --run var/reports/fue [--table URI] [--out DIR]
    focuscrawl report fue --run-id fue-1a2b3c4d-f0 [--duration 7d] [--table URI] [--out DIR]

``--run`` reads the run's ``run.json`` (its folds, run ids, duration, world seeds and sizes,
bootstrap settings), reads every fold's rows back from the ``fue_extractions`` table, joins the
world's hidden labels (recomputed from the recorded seed, size and base rate) and writes the
per-fold tables and ``fue_intervals.{md,csv}`` as the run did.

The same files as ``focuscrawl experiment fue`` writes (seed 000, section IV-F, Figures 2-4:
harvest ratio, ratio to RND and users per hour over time, per simulated day, the paper's
verdicts), from the rows the run streamed to Delta, so a report can be redrawn, or drawn for a
run that was stopped, without running it again.
"""

from __future__ import annotations

import math
from pathlib import Path

from focuscrawl.commandline import parser
from focuscrawl.config import settings
from focuscrawl.experiments.fue import parse_duration
from focuscrawl.fue import report
from focuscrawl.fue.metrics import HOUR
from focuscrawl.fue.pipeline import STATS_TABLE
from focuscrawl.storage import storage_options


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = parser("focuscrawl report fue", __doc__, "focuscrawl report fue --run var/reports/fue",
                "focuscrawl report fue --run-id fue-1a2b3c4d-f0 --duration 7d")
    ap.add_argument("--run", type=Path, action="append",
                    help="output folder (or run.json) of a `focuscrawl experiment fue` run; repeat it to pool the "
                         "folds of runs made with --only-fold (same seed, folds and data)")
    ap.add_argument("--run-id", help="one fold's run id (as `focuscrawl experiment fue` printed)")
    ap.add_argument("--sweep", type=Path, help="output folder of a `focuscrawl experiment fue --sweep NAME=...` run: "
                                              "rebuild every value's tables and sensitivity.{md,csv,png}")
    ap.add_argument("--duration", help="simulated length of the run (default: its last verdict, to the hour)")
    ap.add_argument("--table", default=None, help="Delta table of the stats events (default: the run's, or settings')")
    ap.add_argument("--out", type=Path, help="output folder (default $FOCUSCRAWL_VAR/reports/fue-RUN_ID)")
    args = ap.parse_args(argv)
    if args.sweep is not None:
        return rebuild_sweep(args.sweep, args.table, args.out, cfg)
    if args.run is not None:
        frame = rebuild_run(args.run, args.table, args.out, cfg)
        print(report.intervals_markdown(frame))
        return 0
    if not args.run_id:
        ap.error("pass --run DIR (a run's output folder) or --run-id ID")
    args.table = args.table or STATS_TABLE.path(cfg)
    events = report.events_from_table(args.table, args.run_id, storage_options(cfg))
    duration = parse_duration(args.duration) if args.duration else \
        max(HOUR, math.ceil(max(e.at for e in events) / HOUR) * HOUR)
    out = args.out or Path(cfg.var_dir) / "reports" / f"fue-{args.run_id}"
    built = report.build(events, duration)
    report.write(built, out)
    print(built.markdown())
    print(f"{len(events)} extractions of run {args.run_id} over {duration / HOUR:g} simulated hours: report in {out}")
    return 0


SAME_ACROSS_FOLDS = ("folds", "seed", "data", "duration", "budget", "step", "pseudo_every", "visits_per_step", "cap",
                     "users", "base_rate", "events_per_minute", "world", "train_donors", "resolved_methods", "population")


def rebuild_run(runs: list[Path], table: str | None, out: Path | None, cfg):
    """Every table of recorded runs, from their ``run.json`` and the Delta rows (see the module docstring).

    Several runs (each made with ``--only-fold``) are pooled when their parameters agree. A fold
    that did not finish is reported up to the last simulated day it completed (``elapsed``); the
    pooled figures then cover the shortest elapsed time of all folds, and the tables say so.
    """
    from focuscrawl.experiments.run_record import read_run_json
    from focuscrawl.world.population import hidden_labels

    records = [read_run_json(r, expect="fue") for r in runs]
    first = records[0]
    for r, path in zip(records[1:], runs[1:]):
        differ = [k for k in SAME_ACROSS_FOLDS if r["parameters"].get(k) != first["parameters"].get(k)]
        if differ:
            raise SystemExit(f"{path} differs from {runs[0]} in {', '.join(differ)}: only folds of one design pool")
    run_dir = Path(runs[0]) if Path(runs[0]).is_dir() else Path(runs[0]).parent
    out = out or run_dir
    entries = [(f, table or r["table"]) for r in records for f in r["folds"] if f.get("elapsed")]
    if not entries:
        raise SystemExit("no fold of these runs completed a simulated day yet: nothing to report")
    duration = min(float(f["elapsed"]) for f, _ in entries)
    folds, used = [], []
    for f, uri in entries:
        pop = f["population"]
        labels = hidden_labels(pop["seed"], pop["users"], pop["base_rate"])
        events = [e for e in report.events_from_table(uri, f["run_id"], storage_options(cfg)) if e.at <= duration]
        events = report.with_hidden_labels(events, labels)
        report.write(report.build(events, duration), out / f"fold-{f['fold']}")
        folds.append((f["fold"], events))
        used.append(f)
    frame = report.intervals(folds, n_boot=first["bootstrap"], seed=first["seeds"]["bootstrap_seed"])
    parameters = {**first["parameters"], "duration": f"{duration / 86400:g}d" if duration < float(first["duration"])
                  else first["parameters"]["duration"]}
    note = report.protocol_note(parameters, used)
    if duration < float(first["duration"]):
        note += (f" The run was planned for {float(first['duration']) / 86400:g} simulated days; these tables cover the "
                 f"first {duration / 86400:g}, which every fold completed.")
    best = report.against_best(folds, n_boot=first["bootstrap"], seed=first["seeds"]["bootstrap_seed"])
    report.write_intervals(frame, out, note=note, best=best)
    print(f"{len(folds)} folds of {', '.join(r['run_id'] for r in records)} rebuilt from the Delta rows: report in {out}")
    return frame


def rebuild_sweep(sweep: Path, table: str | None, out: Path | None, cfg) -> int:
    """Every value of a sensitivity sweep (its ``NAME=V`` folders, each a run with a ``run.json``), and
    the sensitivity table and plot over the values that have a completed simulated period."""
    points, name = [], None
    for run_dir in sorted(Path(sweep).glob("*=*")):
        if not (run_dir / "run.json").is_file():
            continue
        key, _, value = run_dir.name.partition("=")
        if name not in (None, key):
            raise SystemExit(f"{sweep} holds sweeps of {name} and {key}: one parameter per folder")
        name = key
        try:
            frame = rebuild_run([run_dir], table, None, cfg)
        except SystemExit as e:
            print(f"{run_dir.name}: left out ({e})")
            continue
        points.append((float(value), frame))
    if not points:
        raise SystemExit(f"no NAME=VALUE run folder with a finished period under {sweep}")
    sens = report.sensitivity_table(name, points)
    report.write_sensitivity(sens, name, out or Path(sweep))
    print((Path(out or sweep) / "sensitivity.md").read_text())
    return 0
