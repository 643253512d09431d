"""`make demo`: the live platform on the world for a bounded time, then the report of what it did.

    focuscrawl demo [--for 10m] [--project projects/world.toml] [--keep-services] [--experiments fue,...]

1. ``focuscrawl up projects/world.toml`` (:class:`focuscrawl.platform.Platform`): the services, the
   classifiers trained from the project's examples, every process of the four loops under the
   supervisor, the project's DAGs unpaused on their own schedules and asset triggers.
2. For ``--for`` (10 minutes by default; less once every DAG has run by itself and every loop's
   process has followed a push) it shows progress: the DAG runs that succeeded so far
   (scheduled or asset-triggered: the demo triggers nothing), and each loop's pushes taken up by
   its running process, whose order before and after the first push is kept
   (:data:`FOLLOWERS`: the FUE chooser's best candidates, the source crawler's recrawl intervals,
   the revisitor's next pages); every poll is also kept as a timeline (pushes applied so far, order
   changed or not), which the report draws beside the DAG runs' start and end times.
3. It then reads what the live run wrote to Delta (:func:`live_summary`), stops the processes
   (and the services, unless ``--keep-services``), writes ``$FOCUSCRAWL_VAR/demo/live.json`` and the
   HTML report (:mod:`focuscrawl.reports.demo`), and prints how to keep the platform running and
   where the runs are in the Airflow UI.

The offline experiments of the four seeds are not part of the live run: the report links them
(``focuscrawl experiment ...``); ``--experiments`` runs some of them after the live part.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from focuscrawl.core.commandline import parser
from focuscrawl.config import Settings, settings
from focuscrawl.core.status_file import read_status
from focuscrawl.reports.demo import succeeded_by_itself  # noqa: F401 - the demo's progress and its report count alike

DEFAULT_PROJECT = "projects/world.toml"

# The loops whose process follows a push: loop -> (process name prefix, status counter of pushes
# applied, status key of the order the push changes).
FOLLOWERS = {
    "fue": ("fue-chooser-", "scores_applied", "top"),
    "sources": ("source-crawler", "schedules_applied", "intervals"),
    "revisits": ("revisitor", "priorities_applied", "order"),
}


def _say(msg: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_for(text: str) -> float:
    """``--for 10m`` -> seconds (the project file's duration grammar)."""
    from focuscrawl.project.values import parse_duration

    seconds = parse_duration(text).total_seconds()
    if seconds < 60:
        raise ValueError(f"--for {text}: under a minute no DAG has run yet; give at least '1m'")
    return seconds


class PushWatch:
    """Each follower's order before its first push and after its latest one, from its status file.

    A status file is found by process name (``$FOCUSCRAWL_VAR/status/<name>.json``); the order is
    taken while no push was applied yet (``before``) and again whenever the applied count grows
    (``after``): the push *visibly* changed the order when the two differ.
    """

    def __init__(self, status_dir: Path, loops: list[str], clock=time.time) -> None:
        self.status_dir = Path(status_dir)
        self.loops = [loop for loop in loops if loop in FOLLOWERS]
        self.seen: dict[str, dict] = {loop: {"process": None, "pushes": 0, "before": None, "after": None}
                                      for loop in self.loops}
        # Every poll's sample per loop, for the report's timeline: when (Unix seconds), pushes applied so far,
        # and whether the order differs from the previous sample's.
        self.timeline: list[dict] = []
        self.clock = clock
        self._order: dict[str, object] = {}

    def _status(self, prefix: str) -> tuple[str | None, dict]:
        for path in sorted(self.status_dir.glob(f"{prefix}*.json")):
            return path.stem, read_status(path)
        return None, {}

    def poll(self) -> dict[str, dict]:
        for loop in self.loops:
            prefix, applied_key, order_key = FOLLOWERS[loop]
            name, status = self._status(prefix)
            if not status:
                continue
            seen = self.seen[loop]
            seen["process"] = name
            applied, order = int(status.get(applied_key) or 0), status.get(order_key)
            self.timeline.append({"at": round(self.clock(), 1), "loop": loop, "pushes": applied,
                                  "order_changed": loop in self._order and order != self._order[loop]})
            self._order[loop] = order
            if applied == 0:
                seen["before"] = order
            elif applied > seen["pushes"]:
                seen["after"] = order
            seen["pushes"] = applied
        return self.seen

    def changed(self, loop: str) -> bool:
        seen = self.seen[loop]
        return seen["pushes"] > 0 and seen["before"] is not None and seen["after"] != seen["before"]


def run_state(client, dag_id: str, run: dict, known: dict) -> str:
    """The run's state as its loop sees it: Airflow's, except that a successful run in which a task was
    skipped is ``skipped``. A Spark job with nothing to do yet skips its task and the tasks after it
    (``NOTHING_TO_DO``, focuscrawl.orchestration.spark_task: e.g. ``outlinks_train`` before two labelled
    periods), so nothing was pushed, yet Airflow lists the run as a success. ``known`` keeps the answers
    across polls: a finished run's tasks do not change."""
    if run["state"] != "success":
        return run["state"]
    key = (dag_id, run["dag_run_id"])
    if key not in known:
        known[key] = "skipped" in client.task_states(dag_id, run["dag_run_id"]).values()
    return "skipped" if known[key] else "success"


def dag_runs(client, dags, known: dict | None = None) -> dict[str, dict[str, int]]:
    """Per DAG: how many runs ended (or stand) in each ``<run_type>:<state>`` (the state of :func:`run_state`;
    ``known`` is its memory, kept by a caller that polls)."""
    known = {} if known is None else known
    counts: dict[str, dict[str, int]] = {}
    for dag_id in dags:
        tally: dict[str, int] = {}
        for run in client.dag_runs(dag_id):
            key = f"{run['run_type']}:{run_state(client, dag_id, run, known)}"
            tally[key] = tally.get(key, 0) + 1
        counts[dag_id] = tally
    return counts


def run_times(client, dags, known: dict) -> list[dict]:
    """Every run of ``dags`` with its type, state (:func:`run_state`), start and end (ISO times, None while
    unset): the report's timeline."""
    return [{"dag": dag_id, "state": run_state(client, dag_id, run, known),
             **{k: run.get(k) for k in ("run_type", "start_date", "end_date")}}
            for dag_id in dags for run in client.dag_runs(dag_id)]


def _frame(uri: str, columns: list[str] | None = None):
    from focuscrawl.lake import open_table

    table = open_table(uri)
    return None if table is None else table.to_pandas(columns=columns)


def live_summary(cfg: Settings, top: int = 10, threshold: float = 0.5) -> dict:
    """What the live run left in Delta, per loop: row counts, the tables' heads and the harvest over time
    (``threshold``: the page focus's) the report shows."""
    from focuscrawl.relevance.harvest import harvest_series, read_items
    from focuscrawl.reports.demo import ESTIMATES_KEY, HARVEST_KEY
    from focuscrawl.crawl.listing_crawler import POSTS_TABLE
    from focuscrawl.ephemeral.tables import PAGE_CLICKS, SOURCE_RECRAWLS, SOURCE_SCHEDULE
    from focuscrawl.fue.batch import CANDIDATE_SCORES_TABLE
    from focuscrawl.fue.pipeline import STATS_TABLE
    from focuscrawl.graph.tables import GRAPH_ESTIMATES, GRAPH_SAMPLE
    from focuscrawl.outlinks.tables import MODELS, PAGE_PRIORITIES, SNAPSHOTS

    def rows(spec) -> int:
        from focuscrawl.lake import table_rows

        return table_rows(spec.path(cfg))

    out: dict = {"rows": {spec.name: rows(spec) for spec in (
        POSTS_TABLE, STATS_TABLE, CANDIDATE_SCORES_TABLE, SOURCE_RECRAWLS, PAGE_CLICKS, SOURCE_SCHEDULE,
        SNAPSHOTS, PAGE_PRIORITIES, MODELS, GRAPH_SAMPLE, GRAPH_ESTIMATES)}}
    out[HARVEST_KEY] = harvest_series(read_items(cfg, threshold), "1min").to_dict("records")
    stats = _frame(STATS_TABLE.path(cfg), ["method", "relevant"])
    if stats is not None and len(stats):
        by = stats.groupby("method")["relevant"]
        out["fue: users extracted and harvest ratio per method (fue_extractions)"] = [
            {"method": m, "extracted": int(n), "relevant": int(r), "harvest_ratio": round(r / n, 3)}
            for m, n, r in zip(by.count().index, by.count(), by.sum())]
    plan = _frame(SOURCE_SCHEDULE.path(cfg))
    if plan is not None and len(plan):
        cols = [c for c in ("source_url", "recrawl_interval_s", "recrawl_rate", "page_rate") if c in plan]
        out["sources: recrawl plan pushed to the crawler (source_schedule)"] = (
            plan.sort_values(cols[1]).head(top)[cols].round(4).to_dict("records"))
    prio = _frame(PAGE_PRIORITIES.path(cfg))
    if prio is not None and len(prio):
        cols = [c for c in ("url", "period", "score") if c in prio]
        out["revisits: page priorities pushed to the revisitor (page_priorities)"] = (
            prio.nlargest(top, "score")[cols].round(4).to_dict("records"))
    est = _frame(GRAPH_ESTIMATES.path(cfg))
    if est is not None and len(est):
        cols = [c for c in ("crawl_id", "estimator", "target", "value", "estimate", "ci_low", "ci_high") if c in est]
        latest = est[est["crawl_id"] == est["crawl_id"].max()] if "crawl_id" in est else est
        out[ESTIMATES_KEY] = (
            latest.sort_values(cols[1:4]).head(3 * top)[cols].round(4).to_dict("records"))
    return out


def run_live(cfg: Settings, project_path: Path, seconds: float, keep_services: bool) -> dict:
    """Steps 1-3 of the module docstring; returns what ``live.json`` holds."""
    from tqdm import tqdm

    from focuscrawl.platform import Platform
    from focuscrawl.project.loading import load_project
    from focuscrawl.reports.demo import PUSHES_KEY, RUNS_KEY
    from focuscrawl.services.airflow import AirflowService

    project = load_project(project_path)
    platform = Platform(project, cfg, project_file=project_path, keep_services=keep_services, log=_say)
    dags = platform.dag_ids()
    _say(f"focuscrawl up {project_path} for {seconds / 60:.0f} min: services, training, every process of "
         f"{', '.join(loop for loop, *_ in project.enabled_loops())}; the first start takes a few minutes")
    watch = PushWatch(Path(cfg.var_dir) / "status", [loop for loop, *_ in project.enabled_loops()])
    started = time.monotonic()
    runs: dict[str, dict[str, int]] = {}
    known: dict = {}  # run_state's answers, kept across the polls
    try:
        platform.start()
        _say(f"platform up in {time.monotonic() - started:.0f}s; watch it: focuscrawl status --watch, "
             f"DAG runs at {cfg.airflow_url}")
        client = AirflowService(cfg).client()
        live_from = time.monotonic()
        with tqdm(total=int(seconds), desc="live platform", unit="s",
                  bar_format="{desc}: {n_fmt}/{total_fmt} s |{bar}| {postfix}") as bar:
            while (done := time.monotonic() - live_from) < seconds:
                watch.poll()
                try:
                    runs = dag_runs(client, dags, known)
                except Exception as exc:  # a slow API answer is not the run's fate
                    _say(f"(Airflow API: {exc})")
                ok = sum(1 for t in runs.values() if succeeded_by_itself(t))
                pushes = ", ".join(f"{loop} {s['pushes']}" for loop, s in watch.seen.items())
                bar.n = int(done)
                bar.set_postfix_str(f"DAGs run by themselves {ok}/{len(dags)}; pushes followed: {pushes}")
                if ok == len(dags) and all(watch.changed(loop) for loop in watch.loops):
                    _say(f"every DAG ran by itself and every loop's process followed a push after {done / 60:.1f} min")
                    break  # --for is the limit: the rest of it would show nothing new
                time.sleep(min(15.0, max(1.0, seconds - done)))
        watch.poll()
        runs = dag_runs(client, dags, known)
        # the minutes the platform ran live, not the --for limit: the run ends sooner once everything ran by itself
        live = {"project": str(project_path), "minutes": round((time.monotonic() - live_from) / 60, 1), "dag_runs": runs,
                RUNS_KEY: run_times(client, dags, known), PUSHES_KEY: watch.timeline,
                "followers": watch.seen, "order_changed": {loop: watch.changed(loop) for loop in watch.loops},
                **live_summary(cfg, threshold=project.profile.pages.threshold if project.profile.pages else 0.5)}
    finally:
        _say("stopping the processes" + ("" if keep_services else " and the services"))
        platform.stop()
    return live


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.reports.demo import parse_sections, platform_steps, run_sections, write_html

    ap = parser("focuscrawl demo", __doc__, "focuscrawl demo --for 10m",
                "focuscrawl demo --for 20m --keep-services --experiments fue   # then: focuscrawl status")
    ap.add_argument("--for", dest="duration", default="10m",
                    help="how long the live platform runs at most (e.g. 10m, 20m); it ends sooner once every "
                         "DAG ran by itself and every loop's process followed a push")
    ap.add_argument("--project", type=Path, default=None, help=f"project file (default: {DEFAULT_PROJECT})")
    ap.add_argument("--keep-services", action="store_true", help="leave Kafka, Airflow and the world up at the end")
    ap.add_argument("--experiments", default="", help="offline report sections to run after the live part "
                                                       "(comma-separated; default none, the report links them)")
    args = ap.parse_args(argv)
    cfg = settings()
    try:
        seconds = parse_for(args.duration)
        names = parse_sections(args.experiments)
    except ValueError as e:
        ap.error(str(e))
    project_path = args.project or Path(cfg.home) / DEFAULT_PROJECT
    out = Path(cfg.var_dir) / "demo"
    out.mkdir(parents=True, exist_ok=True)
    try:
        live = run_live(cfg, project_path, seconds, args.keep_services)
    except Exception as e:  # the report still gets written, the failure at its top
        _say(f"live platform failed: {type(e).__name__}: {e}")
        live = {"failed": f"{type(e).__name__}: {e}; see focuscrawl logs NAME and {cfg.var_dir}/logs"}
    (out / "live.json").write_text(json.dumps(live, indent=1, default=str))
    if names:
        run_sections(out, names, log=_say)
    report = write_html(out, cfg)
    missing = [d for d, t in live.get("dag_runs", {}).items() if not succeeded_by_itself(t)]
    if missing:
        _say(f"no successful scheduled/asset-triggered run yet of: {', '.join(missing)} "
             f"(a longer --for gives the slower loops time)")
    print(f"\nReport: {report}\n\n{platform_steps(cfg, str(args.project or DEFAULT_PROJECT))}", flush=True)
    return 1 if "failed" in live else 0


if __name__ == "__main__":
    sys.exit(main())
