"""``focuscrawl report fue --run DIR | --run-id ID``: a FUE run's report rebuilt from the Delta rows.

    focuscrawl report fue --run var/reports/fue [--table URI] [--out DIR]
    focuscrawl report fue --run-id fue-1a2b3c4d-f0 [--duration 7d] [--table URI] [--out DIR]
    focuscrawl report fue --compare HCP-CB,HCP --seeds-of DIR
    focuscrawl report fue --recount DIR [--out DIR]

``--recount DIR`` rebuilds ``fue_intervals.{csv,md}`` and ``fue_ours_vs_best.csv`` of a recorded run
from the per-fold counts in its own ``fue_intervals.csv`` (and its ``run*.json``), for when the Delta
rows are gone: the intervals depend on the counts only (extracted and relevant per fold, method and
measure), so they come out as a full rebuild would, with today's significance marks.

``--compare A,B --seeds-of DIR`` reads a folder of ``seed-S/`` sweeps of one world parameter (each
``focuscrawl experiment fue --sweep NAME=... --seed S``) from their committed ``fue_intervals.csv``
files and writes ``compare_A_B.{csv,md}``: A's harvest ratio minus B's at every value, per seed
(same world, so paired) with its user-level interval, and over the seeds with a two-level bootstrap interval (seeds, then users);
a difference over seeds is marked when Holm's correction over the table's rows still rejects zero.

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

from focuscrawl.core.commandline import parser
from focuscrawl.config import settings
from focuscrawl.experiments.fue import parse_duration
from focuscrawl.fue import report
from focuscrawl.fue.metrics import HOUR
from focuscrawl.fue.pipeline import STATS_TABLE
from focuscrawl.lake.storage import storage_options


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
    ap.add_argument("--recount", type=Path, help="a run's folder: re-derive its intervals and marks from the counts in "
                                                 "its fue_intervals.csv (no Delta rows needed)")
    ap.add_argument("--compare", help="A,B: two methods to compare over the seeds of --seeds-of (e.g. HCP-CB,HCP)")
    ap.add_argument("--seeds-of", type=Path, help="folder of seed-S/ sweeps of one parameter (with --compare)")
    ap.add_argument("--duration", help="simulated length of the run (default: its last verdict, to the hour)")
    ap.add_argument("--table", default=None, help="Delta table of the stats events (default: the run's, or settings')")
    ap.add_argument("--out", type=Path, help="output folder (default $FOCUSCRAWL_VAR/reports/fue-RUN_ID)")
    args = ap.parse_args(argv)
    if args.recount is not None:
        frame = recount(args.recount, args.out)
        print(report.significant_summary(frame))
        return 0
    if args.compare or args.seeds_of:
        if not (args.compare and args.seeds_of) or len(args.compare.split(",")) != 2:
            ap.error("--compare A,B and --seeds-of DIR go together (e.g. --compare HCP-CB,HCP --seeds-of DIR)")
        a, b = args.compare.split(",")
        print(compare_over_seeds(args.seeds_of, a.strip(), b.strip(), args.out).read_text())
        return 0
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


def compare_over_seeds(root: Path, a: str, b: str, out: Path | None = None, level: float = 0.95) -> Path:
    """``compare_A_B.{csv,md}`` from the ``seed-S/NAME=V/fue_intervals.csv`` under ``root`` (see the module
    docstring). Per seed: the difference of harvest ratios with a ``level`` interval of Jeffreys draws over
    the extracted users (the run's bootstrap count and seed); over seeds: the mean difference with a
    two-level bootstrap interval (each draw resamples the seeds, then draws each chosen seed's difference
    from its Jeffreys posteriors), so it carries both the variation between worlds and that among one
    world's users (a t-interval over 2-3 seeds whose differences happen to agree would not), and the
    two-sided p-value from the same draws, Holm-adjusted over the rows of the table."""
    import numpy as np
    import pandas as pd

    from focuscrawl.experiments.run_record import read_run_json

    rows, commits, name = [], {}, None
    for run_dir in sorted(Path(root).glob("seed-*/*=*")):
        if not (run_dir / "fue_intervals.csv").is_file():
            continue
        key, _, value = run_dir.name.partition("=")
        if name not in (None, key):
            raise SystemExit(f"{root} holds sweeps of {name} and {key}: one parameter per folder")
        name = key
        record = read_run_json(run_dir, expect="fue")
        commits[str(run_dir.relative_to(root))] = record["code"]
        frame = pd.read_csv(run_dir / "fue_intervals.csv")
        frame = frame[frame.scope == frame.scope.iloc[0]] if "pooled" not in set(frame.scope) else frame[frame.scope == "pooled"]
        rng = np.random.default_rng(record["seeds"]["bootstrap_seed"])
        for measure, g in frame.groupby("measure", sort=False):
            g = g.set_index("method")
            if a not in g.index or b not in g.index:
                raise SystemExit(f"{run_dir} has no {a if a not in g.index else b}: run both methods")
            (na, ra), (nb, rb) = (g.loc[m, ["extracted", "relevant"]].astype(int) for m in (a, b))
            draws = (rng.beta(ra + 0.5, na - ra + 0.5, record["bootstrap"]) - rng.beta(rb + 0.5, nb - rb + 0.5, record["bootstrap"]))
            lo, hi = np.percentile(draws, [50 - 50 * level, 50 + 50 * level])
            rows.append({"parameter": key, "value": float(value), "measure": measure, "seed": record["parameters"]["seed"],
                         f"{a}": f"{ra}/{na}", f"{b}": f"{rb}/{nb}", "diff": ra / na - rb / nb, "diff_lo": lo, "diff_hi": hi,
                         "_draws": draws})
    if not rows:
        raise SystemExit(f"no seed-S/NAME=VALUE folder with fue_intervals.csv under {root}")
    per_seed = pd.DataFrame(rows)
    per_seed["order"] = per_seed.measure.map({m: k for k, m in enumerate(report.MEASURES)})
    per_seed = per_seed.sort_values(["order", "value", "seed"], ignore_index=True).drop(columns="order")
    over, rng = [], np.random.default_rng(0)
    for (measure, value), g in per_seed.groupby(["measure", "value"], sort=False):
        seed_draws = np.stack(g["_draws"].to_list())           # seeds x draws
        k, n = seed_draws.shape
        picked = seed_draws[rng.integers(0, k, (n, k)), np.arange(n)[:, None]]  # per draw: k seeds with replacement
        means = picked.mean(axis=1)
        lo, hi = np.percentile(means, [50 - 50 * level, 50 + 50 * level])
        over.append({"parameter": name, "value": value, "measure": measure, "seeds": k, "mean_diff": g["diff"].mean(),
                     "mean_lo": lo, "mean_hi": hi, "p_value": report.two_sided_p(means) if k > 1 else np.nan})
    per_seed = per_seed.drop(columns="_draws")
    over = pd.DataFrame(over)
    tested = over.p_value.notna()
    over["p_holm"] = np.nan
    over.loc[tested, "p_holm"] = report.holm(over.loc[tested, "p_value"].to_numpy())
    over["significant"] = np.where(over.p_holm <= report.ALPHA, np.where(over.mean_diff > 0, "higher", "lower"), "no")
    out = Path(out or root)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"compare_{a}_{b}"
    per_seed.round(4).to_csv(out / f"{stem}_per_seed.csv", index=False)
    over.round(4).to_csv(out / f"{stem}.csv", index=False)
    distinct = {(c.get("commit"), c.get("dirty"), c.get("draft", False)) for c in commits.values()}
    cells = over.assign(cell=[f"{m:+.4f} [{lo:+.4f}, {hi:+.4f}] ({n} seeds){'*' if s != 'no' else ''}" if n > 1
                              else f"{m:+.4f} (1 seed: no interval)"
                              for m, lo, hi, n, s in zip(over.mean_diff, over.mean_lo, over.mean_hi, over.seeds, over.significant)])
    seed_cells = per_seed.assign(cell=[f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}] ({x} vs {y})" for d, lo, hi, x, y in
                                       zip(per_seed["diff"], per_seed.diff_lo, per_seed.diff_hi, per_seed[a], per_seed[b])])
    parts = [f"## {a} minus {b}: harvest ratio difference against {name}",
             f"Run records: `{root.name}/seed-S/{name}=V/run.json`, all from commit "
             + ", ".join(f"`{c}` (dirty: {d}, draft: {dr})" for c, d, dr in sorted(distinct, key=str))
             + f". Over seeds: the mean of the per-seed differences with its {level:.0%} two-level bootstrap interval "
             "(seeds resampled, then each seed's difference drawn over its extracted users), so it holds the "
             f"variation between worlds and among users (`*`: Holm over the {int(tested.sum())} rows of this table "
             f"rejects 0 at {report.ALPHA:g}). Per seed: the same world for both methods; the interval is over its "
             "extracted users only (Jeffreys draws)."]
    for measure in dict.fromkeys(over.measure):
        o = cells[cells.measure == measure].set_index("value").cell.rename("over seeds")
        p = seed_cells[seed_cells.measure == measure].pivot(index="value", columns="seed", values="cell")
        p.columns = [f"seed {c}" for c in p.columns]
        t = pd.concat([o, p.fillna("not run")], axis=1)
        t.index = [f"{name}={v:g}" for v in t.index]
        parts.append(f"### by {measure}\n\n" + t.to_markdown())
    (out / f"{stem}.md").write_text("\n\n".join(parts) + "\n")
    return out / f"{stem}.md"


def recount(run_dir: Path, out: Path | None = None):
    """``fue_intervals`` and ours-vs-best of the run in ``run_dir`` re-derived from its per-fold counts (see
    the module docstring); the run records (``run.json`` or one ``run*.json`` per ``--only-fold`` process)
    give the bootstrap settings and the protocol note."""
    import pandas as pd

    from focuscrawl.experiments.run_record import git_commit, read_run_json
    from focuscrawl.fue.metrics import Extraction

    run_dir = Path(run_dir)
    records = [read_run_json(p, expect="fue") for p in sorted(run_dir.glob("run*.json"))]
    if not records:
        raise SystemExit(f"no run.json (or run*.json) in {run_dir}: pass a `focuscrawl experiment fue` output folder")
    counts = pd.read_csv(run_dir / "fue_intervals.csv")
    counts = counts[counts.scope != "pooled"]
    folds = []
    for scope, g in counts.groupby("scope", sort=True):
        by = {measure: dict(zip(m.method, zip(m.extracted, m.relevant))) for measure, m in g.groupby("measure")}
        verdict, hidden = by["reference verdict"], by.get("hidden label", {})
        events = [Extraction(method, f"{method}_{i}", 0.0, i < r, (i < hidden[method][1]) if method in hidden else None)
                  for method, (n, r) in verdict.items() for i in range(n)]
        folds.append((int(scope.split()[-1]), events))
    first = records[0]
    frame = report.intervals(folds, n_boot=first["bootstrap"], seed=first["seeds"]["bootstrap_seed"])
    best = report.against_best(folds, n_boot=first["bootstrap"], seed=first["seeds"]["bootstrap_seed"])
    note = report.protocol_note(first["parameters"], [f for r in records for f in r["folds"]])
    code = git_commit()
    note += (" Intervals and marks re-derived from the per-fold counts of this folder's fue_intervals.csv "
             f"(`focuscrawl report fue --recount`, report code at commit {code['commit']}, dirty: {code['dirty']}).")
    report.write_intervals(frame, Path(out or run_dir), note=note, best=best)
    return frame
