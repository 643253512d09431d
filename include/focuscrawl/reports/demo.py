"""``focuscrawl report demo``: the demo's one-page HTML report.

    focuscrawl report demo [--out DIR] [--only fue,outlinks] [--rebuild]

First what the live platform did (``live.json``, written by ``focuscrawl demo`` from the Delta
tables of its run, Airflow's run list and its own sampling of the processes' status files): the
DAG runs, each loop's process order before and after the pushes it followed, and the loops' tables.
Then one section per seed's offline experiment (:data:`SECTIONS`), each with the command that
runs it (``focuscrawl experiment ...``); a section not run here shows its committed result when
there is one (FUE's disjoint-fold run, ``bench/results/fue-folds``: a short run cannot tell LCP from RND):

- harvest ratio per method over time, its ratio to RND and users per hour (seed 000, Figures
  2-4); the ratio is add-one smoothed (:func:`focuscrawl.fue.report.smoothed_ratio`);
- Precision@k% of the outlink models (seed 002, Section 7, Figure 15);
- dynamic quality Q_T(t) of the schedulers (seed 001, Section 2);
- NRMSE of the content estimators per sampler (seed 003, experiments);
- in the live part, plots (PNG files under ``figures/`` beside the page, embedded in it): the harvest per
  loop over time (:mod:`focuscrawl.relevance.harvest`, drawn as ``focuscrawl report harvest`` draws it),
  the DAG runs and the pushes each running process followed on one timeline, each process's order before
  and after its pushes, and the graph loop's latest estimates with their intervals as error bars; the raw
  tables behind them are folded away under a link (``<details id='live-tables'>``);
- and the commands that keep the platform running, open the Airflow UI and query the tables.

A missing figure or table is named in the page as missing, never left as an empty panel.
``--rebuild`` only rewrites the HTML from the folders already there.
"""

from __future__ import annotations

import base64
import html
import importlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from focuscrawl.core.commandline import parser
from focuscrawl.config import Settings, settings

@dataclass(frozen=True)
class Section:
    """One experiment of the report: how the demo runs it, and what of its output the page shows."""

    name: str                       # folder under the report's folder
    title: str
    seed: str                       # the seed file and section it reproduces
    module: str                     # its ``main(argv)`` writes the folder
    output_flag: str
    quick: tuple[str, ...]          # the demo's settings: minutes on 2 cores, every plot still meaningful
    figures: tuple[str, ...]        # PNG names or globs in the folder
    tables: tuple[str, ...]         # CSV names or globs in the folder
    caption: str
    committed: str | None = None    # a committed full-length result shown when the section was not run

    def command(self, out: Path) -> list[str]:
        return [*self.quick, self.output_flag, str(out / self.name)]

    def cli(self) -> str:
        """The ``focuscrawl experiment|report NAME ...`` line that runs this section on its own."""
        package, name = self.module.split(".")[1:]
        verb = {"experiments": "experiment", "reports": "report"}[package]
        return f"focuscrawl {verb} {name.replace('_', '-')} {' '.join(self.quick)}"


SECTIONS = (
    Section("fue", "Focused user extraction: harvest ratio per method over time",
            "seed 000 (Real-time focused extraction of social media users), sections IV-V, Figures 2-4",
            "focuscrawl.experiments.fue", "--output",
            ("--methods", "RND,HCP,LCP,HAC,N06", "--duration", "1d", "--step", "10m", "--pseudo-every", "10m"),
            ("fold-*/harvest_ratio.png",), ("fue_intervals.csv",),
            "Every method extracts users in full from the same world with the same request budget, in each of "
            "two donor-disjoint folds (classifiers trained on some donors, the world built from the others); "
            "harvest ratio = relevant users / users extracted, with its ratio to RND and a 95% interval pooled "
            "over the folds, by reference verdict and by hidden label. A day at least: in a few simulated hours "
            "the methods' harvest ratios are within each other's noise.",
            committed="bench/results/fue-folds"),
    Section("outlinks", "Look back, look around: Precision@k% of the outlink models",
            "seed 002 (Look back, look around), Section 7, Figures 14-15", "focuscrawl.reports.outlinks", "--out",
            ("--pages", "800", "--periods", "8", "--n-estimators", "40"),
            ("precision_at_k.png",), ("pk_area.csv",),
            "Pages ranked by predicted new outlinks (NNL) on the held-out period of synthetic weekly snapshots; "
            "area under the curve in brackets, random = 0.5."),
    Section("ephemeral", "Timely crawling of ephemeral content: dynamic quality of the schedulers",
            "seed 001 (Timely crawling of high-quality ephemeral new content), section 2 (Q_T(t)) and 3",
            "focuscrawl.experiments.ephemeral", "--output",
            ("--days", "2", "--worlds", "model", "--seeds", "0"), ("dynamic_quality.png",), ("overall_quality.csv",),
            "Profit (clicks) per second over a trailing window T of every scheduler with the same fetch budget; "
            "the table's overall quality leaves out the first (learning) day."),
    Section("graph-estimation", "Content over large graphs: estimator errors (NRMSE)",
            "seed 003 (Fast crawling methods of exploring content distributed over large graphs), experiments "
            "(UNI, RW, MHRW, FS x NAIVE, MLE, SCE, WCE)",
            "focuscrawl.experiments.graph_estimation", "--output",
            ("--runs", "3", "--fractions", "0.02,0.05,0.1", "--sweep-runs", "10"), ("nrmse_*.png",), ("table_*.csv",),
            "NRMSE of the copy-count (omega) and label distributions estimated from a crawled fraction of the "
            "vertices, per sampler; the table is at 10% of the vertices."),
)
SECTION_NAMES = tuple(s.name for s in SECTIONS)


def parse_sections(spec: str) -> list[str]:
    """``"fue, outlinks"`` -> ``["fue", "outlinks"]``, failing on unknown names with the known ones."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = sorted(set(names) - set(SECTION_NAMES))
    if unknown:
        raise ValueError(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTION_NAMES)}")
    return names


def run_sections(out: Path, names: list[str], argv: dict[str, list[str]] | None = None, log=print) -> None:
    """Run each named section's experiment into ``out/<name>`` (``argv`` overrides its quick settings)."""
    for section in (s for s in SECTIONS if s.name in names):
        target = out / section.name
        target.mkdir(parents=True, exist_ok=True)
        args = [*argv[section.name], section.output_flag, str(target)] if argv and section.name in argv \
            else section.command(out)
        log(f"{section.name}: {section.module} {' '.join(args)}")
        started = time.monotonic()
        code = importlib.import_module(section.module).main(args)
        if code:
            raise RuntimeError(f"{section.name} exited {code}; its output so far is in {target}")
        log(f"{section.name}: done in {time.monotonic() - started:.0f}s")


# -- the page ------------------------------------------------------------------------------


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f"<img alt='{html.escape(path.name)}' src='data:image/png;base64,{data}'>"


def _png(path: Path, caption: str) -> str:
    return f"<figure>{_img(path)}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _table(frame: pd.DataFrame, caption: str) -> str:
    body = frame.to_html(index=False, border=0, float_format=lambda v: f"{v:.4g}", na_rep="")
    return f"<p class='cap'>{html.escape(caption)}</p>{body}"


def _missing(what: str, fix: str) -> str:
    return f"<p class='missing'>missing: {html.escape(what)} ({html.escape(fix)})</p>"


def _matches(folder: Path, patterns: tuple[str, ...]) -> list[tuple[str, list[Path]]]:
    return [(p, sorted(folder.glob(p))) for p in patterns]


def section_html(section: Section, folder: Path, home: Path | None = None) -> str:
    rerun = f"focuscrawl report demo --only {section.name}"
    parts = [f"<h2 id='{section.name}'>{html.escape(section.title)}</h2>",
             f"<p class='seed'>Seed {html.escape(section.seed)}. {html.escape(section.caption)}</p>",
             f"<p class='cap'>Run it: <code>{html.escape(section.cli())}</code></p>"]
    if not folder.is_dir() and section.committed and home is not None and (home / section.committed).is_dir():
        folder = home / section.committed
        parts.append(f"<p class='cap'>Not run here: the committed result in {html.escape(section.committed)}.</p>")
    if not folder.is_dir():
        return "".join(parts) + _missing(f"{section.name} was not run", rerun)
    for pattern, paths in _matches(folder, section.figures):
        parts += [_png(p, f"{section.name}/{p.name}") for p in paths] or [_missing(f"figure {pattern}", rerun)]
    for pattern, paths in _matches(folder, section.tables):
        parts += [_table(pd.read_csv(p), f"{section.name}/{p.name}") for p in paths] or \
                 [_missing(f"table {pattern}", rerun)]
    return "".join(parts)


HARVEST_KEY = "harvest"  # live.json: the harvest series per loop (focuscrawl.relevance.harvest.harvest_series)
RUNS_KEY = "dag_run_times"  # live.json: every DAG run with its type, state, start and end (cli.demo.run_times)
PUSHES_KEY = "push_timeline"  # live.json: each follower's pushes applied and order changes per poll (PushWatch)
ESTIMATES_KEY = "graph: latest crawl's estimates with their intervals (graph_estimates)"
FIGURES = "figures"  # the live run's plots, as PNG files beside report.html (and embedded in it)
STATE_COLOURS = {"success": "tab:green", "skipped": "tab:olive", "failed": "tab:red", "running": "tab:blue",
                 "queued": "tab:grey"}


def succeeded_by_itself(tally: dict[str, int]) -> int:
    """Successful runs a schedule or an Asset started (a manual trigger does not count)."""
    return sum(n for key, n in tally.items() if key in ("scheduled:success", "asset_triggered:success"))


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _when(value) -> pd.Timestamp | None:
    """A run's ISO time or a poll's Unix seconds as a UTC timestamp (None when unset)."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    return pd.Timestamp(value, unit="s", tz="UTC") if isinstance(value, (int, float)) else pd.Timestamp(value)


def plot_timeline(runs: list[dict], pushes: list[dict], path: Path) -> None:
    """Above, each DAG run as a bar from its start to its end (colour: its state; hatched: started by hand);
    below, each follower's pushes applied so far, a filled marker where a push came with a new order and an
    open one where the order stayed."""
    plt = _pyplot()
    dags = sorted({r["dag"] for r in runs})
    # A run still going at the end is drawn up to the latest moment the demo saw.
    seen = [t for t in [*(_when(r.get(k)) for r in runs for k in ("start_date", "end_date")),
                        *(_when(p["at"]) for p in pushes)] if t is not None]
    latest = max(seen) if seen else None
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(10, 2.2 + 0.35 * len(dags) + 2.6),
                                      gridspec_kw={"height_ratios": [max(1, len(dags)), 3]})
    for i, dag in enumerate(dags):
        for r in (r for r in runs if r["dag"] == dag):
            start, end = _when(r.get("start_date")), _when(r.get("end_date"))
            if start is None:
                continue
            end = end or max(start, latest)
            top.barh(i, end - start, left=start, height=0.6, color=STATE_COLOURS.get(r.get("state"), "tab:orange"),
                     hatch="//" if r.get("run_type") == "manual" else None, edgecolor="black", linewidth=0.3)
    top.set_yticks(range(len(dags)), dags, fontsize=8)
    top.set_title("DAG runs (green: success, olive: nothing to do yet, red: failed, blue: running) and the pushes "
                  "the running processes followed", fontsize=10)
    frame = pd.DataFrame(pushes)
    if len(frame):
        frame["when"] = [_when(t) for t in frame["at"]]
        for i, (loop, part) in enumerate(frame.groupby("loop", sort=True)):
            colour = f"C{i}"
            bottom.step(part.when, part.pushes, where="post", color=colour, label=f"{loop}: {int(part.pushes.max())} pushes")
            new = part[part.pushes.diff().fillna(part.pushes) > 0]
            moved = new[new.order_changed]
            bottom.plot(moved.when, moved.pushes, "o", color=colour, markersize=6)
            bottom.plot(new[~new.order_changed].when, new[~new.order_changed].pushes, "o", color=colour,
                        markerfacecolor="white", markersize=6)
        bottom.legend(fontsize=8, title="loop (filled: the order changed)", title_fontsize=8, loc="upper left")
    bottom.set(ylabel="pushes applied", xlabel="time (UTC)")
    import matplotlib.dates as mdates

    bottom.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ranking(order) -> list[str]:
    """A follower's order as item names, best first: a list of ``[item, score]`` as given; a mapping of
    recrawl intervals shortest first (the source recrawled most often; one without an interval yet last)."""
    if isinstance(order, dict):
        return [str(k) for k, _ in sorted(order.items(), key=lambda kv: (kv[1] is None, kv[1] or 0))]
    return [str(item[0] if isinstance(item, (list, tuple)) else item) for item in order or []]


def plot_orders(followers: dict, path: Path, top: int = 8) -> None:
    """Per follower, its order before the first push (left) and after the latest (right), a line per item:
    crossing lines are the push reordering the running process."""
    plt = _pyplot()
    loops = [loop for loop, f in followers.items() if f.get("before") is not None or f.get("after") is not None]
    fig, axes = plt.subplots(1, max(1, len(loops)), figsize=(4.2 * max(1, len(loops)), 3.8), squeeze=False)
    for ax, loop in zip(axes[0], loops):
        f = followers[loop]
        before, after = _ranking(f.get("before"))[:top], _ranking(f.get("after"))[:top]
        for rank, item in enumerate(before):
            to = after.index(item) if item in after else top
            ax.plot([0, 1], [rank, to], "-o", color="tab:blue" if rank != to else "tab:grey", markersize=4)
        for rank, item in enumerate(after):
            if item not in before:
                ax.plot([0, 1], [top, rank], "-o", color="tab:orange", markersize=4)
        short = lambda name: name if len(name) <= 28 else "..." + name[-25:]  # noqa: E731
        for rank, item in enumerate(before):
            ax.text(-0.04, rank, short(item), ha="right", va="center", fontsize=7)
        for rank, item in enumerate(after):
            ax.text(1.04, rank, short(item), ha="left", va="center", fontsize=7)
        if any(item not in after for item in before) or any(item not in before for item in after):
            ax.text(0.5, top + 0.35, "out of its head", ha="center", va="center", fontsize=7, color="#666")
        ax.set(xlim=(-1.1, 2.1), ylim=(top + 0.6, -0.5), xticks=[0, 1], yticks=[])
        ax.set_xticklabels(["before the first push", f"after push {f.get('pushes', '?')}"], fontsize=8)
        ax.set_title(f"{loop} ({f.get('process') or '?'})", fontsize=9)
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
    fig.suptitle("Each running process's order, before and after the pushes it followed (orange: new in its head)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_estimates(rows: list[dict], path: Path, per_target: int = 6) -> None:
    """The graph loop's latest estimates per target: each value's estimate by each estimator, with its
    interval as an error bar (the largest ``per_target`` values by estimate)."""
    plt = _pyplot()
    frame = pd.DataFrame(rows).dropna(subset=["estimate"])
    targets = sorted(frame.target.unique()) if len(frame) else []
    fig, axes = plt.subplots(1, max(1, len(targets)), figsize=(5 * max(1, len(targets)), 4), squeeze=False)
    estimators = sorted(frame.estimator.unique()) if len(frame) else []
    for ax, target in zip(axes[0], targets):
        part = frame[frame.target == target]
        values = part.groupby("value").estimate.max().nlargest(per_target).index.tolist()
        for j, est in enumerate(estimators):
            e = part[(part.estimator == est) & part.value.isin(values)]
            y = [values.index(v) + (j - (len(estimators) - 1) / 2) * 0.18 for v in e.value]
            low = (e.estimate - e.ci_low.fillna(e.estimate)).clip(lower=0)
            high = (e.ci_high.fillna(e.estimate) - e.estimate).clip(lower=0)
            ax.errorbar(e.estimate, y, xerr=[low, high], fmt="o", capsize=3, markersize=4, color=f"C{j}", label=est)
        ax.set_yticks(range(len(values)), [str(v)[:24] for v in values], fontsize=8)
        ax.invert_yaxis()
        ax.set(xlabel="estimated share", title=f"target {target}")
        ax.legend(fontsize=7, title="estimator", title_fontsize=7)
    crawl = frame.crawl_id.iloc[0] if "crawl_id" in frame and len(frame) else "?"
    fig.suptitle(f"Graph loop: estimates of the latest crawl ({crawl}) with their intervals", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _figure(path: Path, out: Path, caption: str) -> str:
    """A plot of the live run: embedded (the page stands alone) and linked to its file beside the page."""
    href = html.escape(path.relative_to(out).as_posix())
    return (f"<figure><a href='{href}'>{_img(path)}</a><figcaption>{html.escape(caption)} "
            f"(<a href='{href}'>{href}</a>)</figcaption></figure>")


def live_figures(live: dict, out: Path) -> dict[str, str]:
    """Draw the live run's plots into ``out/figures``; by figure name, its HTML (or why it is missing)."""
    from focuscrawl.reports.harvest import plot_harvest

    folder = out / FIGURES
    folder.mkdir(parents=True, exist_ok=True)
    parts = {}
    records = live.get(HARVEST_KEY)
    if records:
        series = pd.DataFrame(records)
        series["bin_start"] = pd.to_datetime(series["bin_start"], utc=True)
        plot_harvest(series, folder / "harvest.png")
        parts["harvest"] = _figure(folder / "harvest.png", out,
                                   "Harvest over time per loop: harvest ratio = relevant pages fetched / pages "
                                   "fetched, per minute (dots) and since the start (lines)")
    else:
        parts["harvest"] = _missing("harvest over time", "no loop landed a scored page (a project with "
                                    "[profile.pages], trained by focuscrawl train, scores them)")
    if live.get(RUNS_KEY) or live.get(PUSHES_KEY):
        plot_timeline(live.get(RUNS_KEY) or [], live.get(PUSHES_KEY) or [], folder / "timeline.png")
        parts["timeline"] = _figure(folder / "timeline.png", out,
                                    "DAG runs and pushes on one timeline: a DAG's run lands new scores, its push "
                                    "reaches the running process, whose order changes (filled markers)")
    else:
        parts["timeline"] = _missing("the timeline of DAG runs and pushes", "make demo samples it")
    followers = live.get("followers") or {}
    if any(f.get("before") is not None or f.get("after") is not None for f in followers.values()):
        plot_orders(followers, folder / "orders.png")
        parts["orders"] = _figure(folder / "orders.png", out,
                                  "Order changes: each loop's running process, its head before the first push and "
                                  "after the latest one (never restarted)")
    if live.get(ESTIMATES_KEY):
        plot_estimates(live[ESTIMATES_KEY], folder / "estimates.png")
        parts["estimates"] = _figure(folder / "estimates.png", out,
                                     "Graph estimates with their intervals (error bars), per estimator")
    elif "rows" in live:
        parts["estimates"] = _missing("graph estimates", "the graph_estimation DAG had not run yet: a longer --for")
    return parts


def harvest_totals(records: list[dict]) -> pd.DataFrame:
    series = pd.DataFrame(records)
    totals = series.groupby("loop", as_index=False)[["fetched", "relevant"]].sum()
    totals["harvest"] = (totals.relevant / totals.fetched).round(4)
    return totals


def live_html(live: dict | None, out: Path) -> str:
    """The live run's part of the page (``live.json`` of ``focuscrawl demo``): its plots, and the tables
    behind them folded away under a link."""
    head = ("<h2 id='live'>The live platform: four loops through Kafka, Delta and Airflow</h2>"
            "<p class='seed'>What <code>focuscrawl up</code> did during the demo: every DAG run Airflow made by "
            "itself (run type scheduled or asset_triggered), each loop's running process before and after "
            "the pushes it followed, and what landed in Delta.</p>")
    if not live:
        return head + "<p>Not run here: <code>make demo</code> (<code>focuscrawl demo</code>) runs it.</p>"
    if "failed" in live:
        return head + f"<p class='missing'>failed: {html.escape(live['failed'])}</p>"
    runs = live.get("dag_runs") or {}
    ok = sum(succeeded_by_itself(t) for t in runs.values())
    pushes = ", ".join(f"{loop} {f.get('pushes', 0)}" for loop, f in (live.get("followers") or {}).items())
    parts = [head, f"<p>{live.get('minutes', '?')} minutes; {ok} DAG runs succeeded by themselves"
                   + (f"; pushes followed: {html.escape(pushes)}" if pushes else "")
                   + ". <a href='#live-tables' onclick=\"document.getElementById('live-tables').open=true\">The tables "
                   "behind these plots</a>.</p>",
             *live_figures(live, out).values()]
    tables = []
    if runs:
        tables.append(_table(pd.DataFrame([{"dag": d, **{k: v for k, v in sorted(t.items())}} for d, t in runs.items()])
                             .fillna(0), f"DAG runs after {live.get('minutes', '?')} minutes, by run type and state"))
    followers = live.get("followers") or {}
    if followers:
        tables.append(_table(pd.DataFrame([
            {"loop": loop, "process": f.get("process"), "pushes applied": f.get("pushes"),
             "order changed": (live.get("order_changed") or {}).get(loop),
             "before the first push": json.dumps(f.get("before"))[:300],
             "after the latest push": json.dumps(f.get("after"))[:300]} for loop, f in followers.items()]),
            "each loop's running process follows its push (never restarted)"))
    if live.get("rows"):
        tables.append(_table(pd.DataFrame({"table": list(live["rows"]), "rows": list(live["rows"].values())}),
                             "rows in the lake"))
    if live.get(HARVEST_KEY):
        tables.append(_table(harvest_totals(live[HARVEST_KEY]),
                             "per loop: pages fetched and scored, relevant ones, harvest ratio"))
    timelines = (HARVEST_KEY, RUNS_KEY, PUSHES_KEY)
    tables += [_table(pd.DataFrame(v), k) for k, v in live.items() if isinstance(v, list) and v and k not in timelines]
    if tables:
        parts.append("<details id='live-tables'><summary>The tables behind these plots (DAG runs, the processes' "
                     "orders, rows in the lake, the heads of the loops' tables)</summary>" + "".join(tables)
                     + "</details>")
    return "".join(parts)


def platform_steps(cfg: Settings, project_path: str = "projects/world.toml") -> str:
    """How to keep it running and where to see the runs (printed by the demo, shown in the report)."""
    return f"""# keep the platform running (no time limit; Ctrl-C or `focuscrawl down` stops it)
.venv/bin/focuscrawl up {project_path}
.venv/bin/focuscrawl status --watch        # processes, consumer lag, last DAG runs, live figures per loop

# the DAG runs of this demo in the Airflow UI (start the services again if the demo stopped them)
.venv/bin/focuscrawl services up
#   open {cfg.airflow_url}/dags?tags=focuscrawl  (user {cfg.airflow_user}; password in {cfg.var_dir}/airflow/passwords.json)
#   each DAG's Runs tab: run type "scheduled" or "asset_triggered", and the task logs"""


def next_steps(cfg: Settings) -> str:
    """How to keep the platform running, open the UI and query the tables (in the page and printed by the demo)."""
    db = cfg.catalog_db
    return f"""{platform_steps(cfg)}

# Spark SQL over the Delta tables ({cfg.lake})
.venv/bin/focuscrawl sql "SHOW TABLES IN {db}"
.venv/bin/focuscrawl sql "SELECT method, count(*) AS extracted, round(avg(CAST(relevant AS INT)), 3) AS harvest_ratio
    FROM {db}.fue_extractions GROUP BY 1 ORDER BY 1"
.venv/bin/focuscrawl sql "SELECT url, score FROM {db}.page_priorities ORDER BY score DESC LIMIT 10"
.venv/bin/focuscrawl sql            # interactive prompt (more example queries in docs/querying.md)

# rebuild this page, or run one offline experiment into it
.venv/bin/focuscrawl report demo --rebuild
.venv/bin/focuscrawl report demo --only fue

.venv/bin/focuscrawl services down  # stop everything"""


STYLE = ("body{font-family:sans-serif;max-width:1150px;margin:2em auto;color:#222}img{max-width:100%}"
         "figure{margin:1em 0}figcaption,.cap{color:#666;font-size:90%}.seed{color:#444}"
         "table{border-collapse:collapse;font-size:85%;margin-bottom:1em}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
         "pre{background:#f4f4f4;padding:1em;overflow:auto}.missing{color:#a00;font-weight:bold}"
         "details{margin:1em 0}summary{cursor:pointer;color:#05a}")


def write_html(out: Path, cfg: Settings | None = None) -> Path:
    """``out/report.html`` from ``out/live.json`` and the section folders under ``out``."""
    cfg = cfg or settings()
    live_file = out / "live.json"
    live = json.loads(live_file.read_text()) if live_file.exists() else None
    links = " · ".join(f"<a href='#{s.name}'>{html.escape(s.name)}</a>" for s in SECTIONS)
    parts = ["<!doctype html><meta charset='utf-8'><title>focuscrawl demo report</title>",
             f"<style>{STYLE}</style><h1>focuscrawl demo report</h1>",
             f"<p>Written {time.strftime('%Y-%m-%d %H:%M:%S %Z')} from {html.escape(str(out))}. "
             f"<a href='#live'>live platform</a> · {links} · <a href='#where'>where to look next</a></p>",
             live_html(live, out), *(section_html(s, out / s.name, Path(cfg.home)) for s in SECTIONS),
             f"<h2 id='where'>Where to look next</h2><pre>{html.escape(next_steps(cfg))}</pre>"]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    path.write_text("\n".join(parts))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = parser("focuscrawl report demo", __doc__, "focuscrawl report demo --rebuild",
                "focuscrawl report demo --only fue,outlinks --out /tmp/demo")
    ap.add_argument("--out", type=Path, help="report folder (default: $FOCUSCRAWL_VAR/demo)")
    ap.add_argument("--only", default=",".join(SECTION_NAMES),
                    help=f"comma-separated sections to (re)run, of {','.join(SECTION_NAMES)}")
    ap.add_argument("--rebuild", action="store_true", help="run nothing, rewrite report.html from the folders")
    args = ap.parse_args(argv)
    cfg = settings()
    out = args.out or Path(cfg.var_dir) / "demo"
    try:
        names = parse_sections(args.only)
    except ValueError as e:
        ap.error(str(e))
    if not args.rebuild:
        run_sections(out, names)
    print(f"report: {write_html(out, cfg)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
