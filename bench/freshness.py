"""Loop freshness on the live platform: a Delta commit to the running process applying the refreshed scores.

    python bench/freshness.py [--minutes 60] [--closings 10] [--competing-load 2]
                                    [--out bench/results/freshness] [--draft]

``focuscrawl up projects/world.toml`` runs as an operator starts it (``$FOCUSCRAWL_VAR``, emptied first but for
its ``jars``), with ``--competing-load N`` busy CPU processes beside it from the start. Until every loop closed
``--closings`` times or ``--minutes`` passed, the bench samples the followers' status documents (each keeps its
last pushes applied: ``applied_pushes``, ``focuscrawl.stream.pushes``) and the load; then it asks Airflow's REST
API and the Delta logs what happened, stops the platform (``focuscrawl down``) and writes
``freshness-load<N>.json``, ``.md`` and ``.png`` to ``--out``.

A *closing* is one successful run of a loop's pushing DAG (``focuscrawl.platform.up.LOOP_DAGS``, its last) whose
push the following process applied (``focuscrawl.cli.demo.FOLLOWERS``), traced back to the Delta commit behind it:

- **commit**: for a DAG on a stream-landed table, the version the asset event announces
  (``focuscrawl.orchestration.asset_events``: ``extra.delta_version``), its time from the table's Delta history; for
  the revisits loop through ``outlinks_train``'s triggering event, produced by an ``outlinks_features`` run, to that
  run's. ``fue_pseudo_training`` runs on a time schedule: the newest commit of its inputs (``fue_extractions``,
  ``reddit_posts``) before its ``refresh`` task started (which reads them as they are then).
- **trigger**: the asset event; **queued**, **start**: the first run's. For the time-scheduled FUE run, queued on
  the schedule's tick before the commit it reads, ``commit→trigger`` is the commit to its ``refresh`` task starting
  and the run's own queue wait is reported apart;
- **job**: the first run's start to the push (revisits: the features run, the wait for the train run, the train run
  to its push, also split);
- **push**: the last record of the push on the feedback topic (its Kafka timestamp);
- **applied**: the follower had applied the push's last record (``last_applied_ms``).

The graph loop's estimates go to ``graph_estimates`` and no process follows them: its closing ends at the run's end
(the estimates committed), with no push and no applied stage.

``stale`` is the other view of the same closing: from the oldest commit the previous closing did not serve (the
first version after the previous event's; for FUE the first input commit after the previous run started) to applied;
it includes the rate limit of the asset events (one per DAG per minute) and, for FUE, the schedule's period.

Reported per loop: closings, p50/p90/max of every stage, of the total and of ``stale``; the time from ``up`` until
each loop first closed and until all had; cores, the load before, after and sampled every 5 s, the competing load,
the commit (``bench/results`` only from a clean tree, unless ``--draft``). Not in ``python -m bench``: it runs the
whole platform for up to ``--minutes``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "include"), str(ROOT)]

LOOPS = ("fue", "sources", "revisits", "graph")
STAGES = ("commit→trigger", "trigger→queued", "queued→start", "job", "push→applied")
# the acceptance bound of each loop's p50 commit -> applied (seconds)
BOUNDS = {"fue": 60.0, "sources": 60.0, "revisits": 180.0, "graph": 60.0}
ALL_CLOSED_BOUND = 300.0
FUE_READER_TASK = "refresh"  # the task of fue_pseudo_training that reads its inputs
PUSH_SLACK_S = 5.0  # a push's last record may carry a timestamp a little after the run's end as Airflow records it


def say(msg: str) -> None:
    print(f"[freshness {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def epoch(stamp: str | None) -> float | None:
    """An Airflow REST timestamp (ISO 8601, ``Z``) as epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None


# -- the analysis (pure: tests/bench/test_freshness.py) ---------------------------------------------------

def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation between the closest ranks (numpy's default)."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def stages(c: dict) -> dict[str, float | None]:
    """One closing's stages in seconds (None where it has none: the graph loop's push), ``job`` split by run
    (``job: <dag> run``, ``job: wait for <dag>``, ``job: <dag> to push``), ``total`` and ``stale``."""
    runs = c["runs"]
    first, last = runs[0], runs[-1]
    end = c["push"] if c.get("push") is not None else last["end"]
    if c.get("reader_started") is not None:
        # a time-scheduled run: queued on the schedule's tick, before the commit it reads; the commit waits for
        # the reading task to start, then the job runs to the push
        out: dict[str, float | None] = {
            "commit→trigger": c["reader_started"] - c["commit"], "trigger→queued": None, "queued→start": None,
            "job": end - c["reader_started"],
            "push→applied": None if c.get("applied") is None else c["applied"] - c["push"],
            "job: run queued→start (before the commit)": first["start"] - first["queued"],
        }
    else:
        out = {
            "commit→trigger": c["trigger"] - c["commit"],
            "trigger→queued": first["queued"] - c["trigger"],
            "queued→start": first["start"] - first["queued"],
            "job": end - first["start"],
            "push→applied": None if c.get("applied") is None else c["applied"] - c["push"],
        }
    if len(runs) > 1:
        for before, run in zip(runs, runs[1:]):
            out[f"job: {before['dag']} run"] = before["end"] - before["start"]
            out[f"job: wait for {run['dag']}"] = run["start"] - before["end"]
        out[f"job: {last['dag']} to {'push' if c.get('push') is not None else 'end'}"] = end - last["start"]
    done = c["applied"] if c.get("applied") is not None else end
    out["total"] = done - c["commit"]
    out["stale"] = None if c.get("oldest_unserved") is None else done - c["oldest_unserved"]
    return {k: None if v is None else round(v, 3) for k, v in out.items()}


def summarize(closings: list[dict]) -> dict[str, dict]:
    """Per stage (in the order first seen): n, p50, p90, max over the closings that have it."""
    table: dict[str, list[float]] = {}
    for c in closings:
        for k, v in stages(c).items():
            table.setdefault(k, [])
            if v is not None:
                table[k].append(v)
    return {k: {"n": len(vs), "p50": _r(percentile(vs, 50)), "p90": _r(percentile(vs, 90)),
                "max": _r(max(vs) if vs else None)} for k, vs in table.items()}


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


def first_closed(closings: dict[str, list[dict]], up_at: float) -> dict[str, float | None]:
    """Seconds from ``up`` until each loop first closed (its first push applied; graph: estimates written)."""
    out = {}
    for loop, cs in closings.items():
        done = [c["applied"] if c.get("applied") is not None else (c.get("push") or c["runs"][-1]["end"]) for c in cs]
        out[loop] = round(min(done) - up_at, 1) if done else None
    return out


def merge_pushes(samples: list[dict]) -> list[dict]:
    """The pushes a follower applied, from status samples (``{"pid", "applied_pushes"}``): a push sampled while it
    was being applied is taken at its last sample; a push a restarted follower read again keeps its first
    application."""
    latest: dict[tuple, dict] = {}
    for s in samples:
        for p in s.get("applied_pushes") or []:
            key = (s.get("pid"), p["topic"], p["first_record_ms"])
            if key not in latest or p["records"] >= latest[key]["records"]:
                latest[key] = p
    first: dict[tuple, dict] = {}
    for (_pid, topic, start), p in latest.items():
        key = (topic, start)
        if key not in first or p["last_applied_ms"] < first[key]["last_applied_ms"]:
            first[key] = p
    return sorted(first.values(), key=lambda p: p["last_record_ms"])


def match_push(pushes: list[dict], start: float, end: float) -> dict | None:
    """The push a run made: the latest whose last record was sent between the run's start and end."""
    inside = [p for p in pushes if start <= p["last_record_ms"] / 1000 <= end + PUSH_SLACK_S]
    return inside[-1] if inside else None


# -- the trace: Airflow's REST API and the Delta logs --------------------------------------------------------------

class Trace:
    """What the bench reads from Airflow and the lake, cached (a finished run does not change)."""

    def __init__(self, client, cfg) -> None:
        self.client, self.cfg = client, cfg
        self._upstream: dict[tuple[str, str], list[dict]] = {}
        self._history: dict[str, list[tuple[int, float]]] = {}
        self._history_at: dict[str, float] = {}
        self._task_start: dict[tuple[str, str, str], float | None] = {}

    def runs(self, dag: str) -> list[dict]:
        return [r for r in self.client.dag_runs(dag) if r["state"] == "success"]

    def run(self, dag: str, run_id: str) -> dict:
        from urllib.parse import quote

        return self.client._call("GET", f"/api/v2/dags/{dag}/dagRuns/{quote(run_id, safe='')}").json()

    def upstream(self, dag: str, run_id: str) -> list[dict]:
        from urllib.parse import quote

        key = (dag, run_id)
        if key not in self._upstream:
            self._upstream[key] = self.client._call(
                "GET", f"/api/v2/dags/{dag}/dagRuns/{quote(run_id, safe='')}/upstreamAssetEvents").json()["asset_events"]
        return self._upstream[key]

    def task_start(self, dag: str, run_id: str, task_id: str) -> float | None:
        """When the first instance of ``task_id`` (mapped: any index) started in the (finished) run."""
        from urllib.parse import quote

        key = (dag, run_id, task_id)
        if key not in self._task_start:
            tis = self.client._call("GET", f"/api/v2/dags/{dag}/dagRuns/{quote(run_id, safe='')}/taskInstances").json()
            starts = [epoch(t["start_date"]) for t in tis["task_instances"] if t["task_id"] == task_id and t.get("start_date")]
            self._task_start[key] = min(starts) if starts else None
        return self._task_start[key]

    def asset_events(self, asset_id: int) -> list[dict]:
        return self.client._call("GET", "/api/v2/assets/events",
                                 params={"asset_id": asset_id, "limit": 1000}).json()["asset_events"]

    def history(self, path: str) -> list[tuple[int, float]]:
        """``(version, commit epoch s)`` of the Delta table at ``path``, oldest first (re-read at most every 10 s)."""
        from deltalake import DeltaTable

        if path not in self._history or time.time() - self._history_at[path] > 10:
            try:
                hist = DeltaTable(path).history()
            except Exception:  # noqa: BLE001 - a table not created yet has no commits
                hist = []
            self._history[path] = commit_times(hist)
            self._history_at[path] = time.time()
        return self._history[path]

    def commit_at(self, path: str, version: int) -> float | None:
        return next((t for v, t in self.history(path) if v == version), None)

    def commits_between(self, paths: list[str], after: float, before: float) -> list[float]:
        return sorted(t for p in paths for _v, t in self.history(p) if after < t <= before)


def commit_times(history: list[dict]) -> list[tuple[int, float]]:
    """``(version, commit epoch s)``, oldest first, from delta-rs's ``DeltaTable.history()`` (newest first).

    Each commit's version is its place in the list, not the entry's ``version``: delta-rs (1.6) lists every
    commit up to the newest in the log but numbers them down from the version the table was loaded at, so a
    commit landing between the load and the listing shifts every label by one (seen here: the competing-load
    run of 2026-12-05 put each page_snapshots commit 31 s late, one revisit period, and its commit→trigger
    below zero). The tables' logs are complete (nothing here removes a commit), so the oldest is version 0."""
    return [(version, h["timestamp"] / 1000) for version, h in enumerate(reversed(history)) if "timestamp" in h]


def _location(uri: str) -> str:
    return uri[len("file://"):] if uri.startswith("file://") else uri


def _run_times(dag: str, r: dict) -> dict:
    return {"dag": dag, "run_id": r["dag_run_id"], "queued": epoch(r.get("queued_at")) or epoch(r["start_date"]),
            "start": epoch(r["start_date"]), "end": epoch(r["end_date"]), "run_type": r.get("run_type")}


def loop_closings(trace: Trace, loop: str, pushes: list[dict], fue_inputs: list[str]) -> tuple[list[dict], dict]:
    """Every closing of ``loop`` so far, and the count of pushing runs that did not close (and why)."""
    from focuscrawl.platform.up import LOOP_DAGS

    dags = LOOP_DAGS[loop]
    closings, skipped = [], {}

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    previous_read = None
    for r in sorted(trace.runs(dags[-1]), key=lambda r: r["start_date"]):
        chain = [_run_times(dags[-1], r)]
        # walk the events back through the loop's own DAGs (revisits: train <- features)
        events = trace.upstream(dags[-1], r["dag_run_id"])
        while events and events[0].get("source_dag_id") in dags:
            ev = min(events, key=lambda e: e["timestamp"])
            src = trace.run(ev["source_dag_id"], ev["source_run_id"])
            chain.insert(0, _run_times(ev["source_dag_id"], src))
            events = trace.upstream(ev["source_dag_id"], ev["source_run_id"])
        first = chain[0]
        c = {"runs": chain, "push": None, "applied": None, "oldest_unserved": None}
        if events:
            ev = min(events, key=lambda e: e["timestamp"])
            version = (ev.get("extra") or {}).get("delta_version")
            path = _location(ev["uri"])
            if version is None:
                skip("triggering event names no Delta version")
                continue
            c.update(trigger_kind="asset event", trigger=epoch(ev["timestamp"]), commit_table=ev["name"],
                     commit_version=version, commit=trace.commit_at(path, version))
            earlier = [e for e in trace.asset_events(ev["asset_id"])
                       if epoch(e["timestamp"]) < epoch(ev["timestamp"]) and (e.get("extra") or {}).get("delta_version") is not None]
            if earlier:
                prev = max(earlier, key=lambda e: e["timestamp"])["extra"]["delta_version"]
                c["oldest_unserved"] = trace.commit_at(path, prev + 1)
        elif fue_inputs:  # a time-scheduled DAG (or its first run, which `up` may trigger)
            # the newest input commit before the task that reads the inputs started (it reads them as they are then)
            reads = trace.task_start(first["dag"], first["run_id"], FUE_READER_TASK) or first["start"]
            before = trace.commits_between(fue_inputs, 0, reads)
            c.update(trigger_kind="schedule", trigger=first["queued"], commit_table="+".join(Path(p).name for p in fue_inputs),
                     commit=before[-1] if before else None, reader_started=reads)
            if previous_read is not None:
                unserved = trace.commits_between(fue_inputs, previous_read, reads)
                c["oldest_unserved"] = unserved[0] if unserved else None
            previous_read = reads
        else:
            skip(f"{first['run_type']} run without an upstream asset event")
            continue
        if c.get("commit") is None:
            skip("no commit of its input before the run read it" if fue_inputs else "commit not in the table's history")
            continue
        if loop != "graph":
            push = match_push(pushes, chain[-1]["start"], chain[-1]["end"])
            if push is None:
                skip("no push applied by the follower (none sent, or not applied yet)")
                continue
            c["push"], c["applied"] = push["last_record_ms"] / 1000, push["last_applied_ms"] / 1000
            c["push_records"] = push["records"]
        c["stages"] = stages(c)
        closings.append(c)
    return closings, skipped


# -- the run --------------------------------------------------------------------------------------------------------

class Bench:
    def __init__(self, cfg, project: Path) -> None:
        self.cfg, self.project, self.var = cfg, project, Path(cfg.var_dir)
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "include"), str(ROOT)]
                                                                 + [p for p in [os.environ.get("PYTHONPATH")] if p])}
        self.samples: dict[str, list[dict]] = {loop: [] for loop in LOOPS}
        self.loads: list[tuple[float, list[float]]] = []
        self._stop = threading.Event()
        self.up_proc: subprocess.Popen | None = None
        self.all_up_at: float | None = None

    def focuscrawl(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "focuscrawl.cli.main", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, **kw)

    def up(self) -> None:
        log = open(self.var / "freshness-up.log", "ab")
        self.up_proc = subprocess.Popen([sys.executable, "-m", "focuscrawl.cli.main", "up", str(self.project)],
                                        cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def all_up(self) -> bool:
        from focuscrawl.platform.supervisor import read_state

        procs = read_state(self.var).get("processes", [])
        return bool(procs) and all(p["state"] == "up" and p.get("pid") for p in procs)

    def watch(self) -> None:
        """Every 3 s: each follower's applied pushes; every 5 s the load; when every process is up."""
        from focuscrawl.cli.demo import FOLLOWERS
        from focuscrawl.control import CONTROL_TOPIC
        from focuscrawl.core.status_file import read_status

        tick = 0
        while not self._stop.wait(3.0):
            tick += 1
            if tick % 2 == 0 or not self.loads:
                self.loads.append((time.time(), load()))
            if self.all_up_at is None and self.all_up():
                self.all_up_at = time.time()
            for loop, (prefix, _applied, _) in FOLLOWERS.items():
                for path in sorted((self.var / "status").glob(f"{prefix}*.json")):
                    s = read_status(path)
                    pushes = [p for p in s.get("applied_pushes") or [] if p["topic"] != CONTROL_TOPIC]
                    if pushes:
                        self.samples[loop].append({"pid": s.get("pid"), "applied_pushes": pushes})
                # the history holds the last pushes only: keep the samples short
                if len(self.samples[loop]) > 400:
                    self.samples[loop] = [{"pid": None, "applied_pushes": merge_pushes(self.samples[loop])}]

    def closings(self, trace: Trace) -> tuple[dict, dict]:
        from focuscrawl.crawl.listing_crawler import POSTS_TABLE
        from focuscrawl.fue.pipeline import STATS_TABLE

        fue_inputs = [STATS_TABLE.path(self.cfg), POSTS_TABLE.path(self.cfg)]
        out, skipped = {}, {}
        for loop in LOOPS:
            try:
                out[loop], skipped[loop] = loop_closings(trace, loop, merge_pushes(self.samples[loop]),
                                                         fue_inputs if loop == "fue" else [])
            except Exception as exc:  # noqa: BLE001 - a slow API answer under load: asked again next time
                say(f"{loop}: not traced this time ({type(exc).__name__}: {exc})")
                out[loop], skipped[loop] = [], {"trace failed": 1}
        return out, skipped


def competing_load(n: int) -> list[subprocess.Popen]:
    """``n`` processes that each keep one core busy (a plain Python loop), until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(n)]


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loops = [l for l in LOOPS if report["loops"][l]["closings"]]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw={"width_ratios": [1, 1.3]})
    colors = dict(zip(STAGES, ("tab:blue", "tab:orange", "tab:red", "tab:green", "tab:purple")))
    for i, loop in enumerate(loops):
        left = 0.0
        for st in STAGES:
            v = (report["loops"][loop]["stages"].get(st) or {}).get("p50")
            if v:
                ax.barh(i, v, left=left, color=colors[st], label=st)
                left += v
        ax.text(left, i, f" {report['loops'][loop]['stages']['total']['p50']} s", va="center", fontsize=8)
    handles, labels = ax.get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    ax.legend(seen.values(), seen.keys(), fontsize=7, loc="lower right")
    ax.set_yticks(range(len(loops)), loops)
    ax.set_xlabel("seconds, p50 of each stage (commit → applied)")
    ax.set_title("stage split per loop (medians)", fontsize=10)
    t0 = report["up_at"]
    for loop in loops:
        cs = report["loops"][loop]["closings_detail"]
        xs = [((c["applied"] or c["runs"][-1]["end"]) - t0) / 60 for c in cs]
        bx.plot(xs, [c["stages"]["total"] for c in cs], "o-", ms=3, label=loop)
    for loop, bound in BOUNDS.items():
        if loop in loops:
            bx.axhline(bound, ls=":", lw=0.7, color="grey")
    bx.set_xlabel("minutes since `focuscrawl up` (each point: one closing, when applied)")
    bx.set_ylabel("commit → applied (s)")
    if loops:
        bx.legend(fontsize=7)
    bx.set_title("every closing", fontsize=10)
    fig.suptitle(f"loop freshness at {(report['commit'] or '?')[:7]}: {report['cpus']} cores, competing load "
                 f"{report['competing_load']}, load {report['load']['sampled_mean']} (mean 1-min)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(r: dict) -> str:
    lo = r["load"]
    lines = [f"# Loop freshness: competing load {r['competing_load']}", "",
             f"`python bench/freshness.py --competing-load {r['competing_load']}` at commit "
             f"`{(r['commit'] or '?')[:10]}` ({r['dirty_files']} files modified{', draft' if r['draft'] else ''}), "
             f"{r['started']}, {r['minutes_run']} min of `focuscrawl up {r['project']}` on {r['cpus']} cores; "
             f"load average (1/5/15 min) {lo['before']} before, {lo['after']} after; the 1-min load sampled every 5 s: "
             f"min {lo['sampled_min']}, mean {lo['sampled_mean']}, max {lo['sampled_max']} "
             f"({r['competing_load']} busy processes of the bench's own; the rest is the platform and whatever else "
             "the shared machine ran).", "",
             f"Every process up {r['all_up_s']} s after `up`. First closing per loop (s after `up`): "
             + ", ".join(f"{l} {v}" for l, v in r["first_closed_s"].items())
             + f"; **all loops closed {r['all_closed_s']} s after `up`**.", "",
             "Seconds per stage, p50 / p90 / max over the closings (docs of the stages: the bench's docstring). "
             "`total` is commit → applied (graph: → estimates written, no process follows them); `stale` starts at "
             "the oldest commit the previous closing did not serve.", "",
             "| loop | closings | " + " | ".join(STAGES) + " | total | stale | p50 bound |",
             "| --- | ---: | " + " | ".join("---:" for _ in STAGES) + " | ---: | ---: | ---: |"]

    def cell(s: dict | None) -> str:
        if not s or s["p50"] is None:
            return "n/a"
        return f"{s['p50']} / {s['p90']} / {s['max']}"

    for loop in LOOPS:
        d = r["loops"][loop]
        st = d["stages"]
        lines.append(f"| {loop} | {d['closings']} | " + " | ".join(cell(st.get(s)) for s in STAGES)
                     + f" | **{cell(st.get('total'))}** | {cell(st.get('stale'))} | {BOUNDS[loop]:g} |")
    parts = [(loop, k, v) for loop in LOOPS for k, v in r["loops"][loop]["stages"].items() if k.startswith("job: ")]
    if parts:
        lines += ["", "The job stage of a multi-DAG loop, split:", "", "| loop | part | p50 / p90 / max |",
                  "| --- | --- | ---: |"]
        lines += [f"| {loop} | {k[5:]} | {cell(v)} |" for loop, k, v in parts]
    lines += ["", "Pushing runs that did not count as a closing: "
              + ("; ".join(f"{l}: " + ", ".join(f"{n} {why}" for why, n in d["not_closed"].items())
                           for l, d in r["loops"].items() if d["not_closed"]) or "none") + ".", "",
              "Acceptance: " + "; ".join(f"{c}: **{'holds' if ok else 'fails'}**" for c, ok in r["acceptance"].items())
              + ".", ""]
    return "\n".join(lines)


def report_of(bench: Bench, closings: dict, skipped: dict, meta: dict) -> dict:
    up_at = meta["up_at"]
    firsts = first_closed(closings, up_at)
    loads = [l[0] for _t, l in bench.loads] or [None]
    all_closed = None if any(v is None for v in firsts.values()) else max(firsts.values())
    r = {**meta,
         "all_up_s": None if bench.all_up_at is None else round(bench.all_up_at - up_at, 1),
         "first_closed_s": firsts, "all_closed_s": all_closed,
         "load": {**meta["load"], "sampled_min": min(loads, default=None) if loads[0] is not None else None,
                  "sampled_mean": round(sum(loads) / len(loads), 2) if loads[0] is not None else None,
                  "sampled_max": max(loads) if loads[0] is not None else None,
                  "samples": [[round(t - up_at, 1), l] for t, l in bench.loads]},
         "loops": {}}
    for loop in LOOPS:
        cs = closings.get(loop, [])
        r["loops"][loop] = {"closings": len(cs), "stages": summarize(cs), "not_closed": skipped.get(loop, {}),
                            "closings_detail": cs}
    r["acceptance"] = {
        **{f"{loop} p50 ≤ {BOUNDS[loop]:g} s": bool(r["loops"][loop]["closings"])
           and r["loops"][loop]["stages"]["total"]["p50"] <= BOUNDS[loop] for loop in LOOPS},
        f"every loop closed within {ALL_CLOSED_BOUND:g} s of up": all_closed is not None and all_closed <= ALL_CLOSED_BOUND,
    }
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # FUE's schedule and the graph sampler's rounds come every 5 minutes: ten closings of each take ~50 minutes
    ap.add_argument("--minutes", type=float, default=60.0, help="the longest the platform runs")
    ap.add_argument("--closings", type=int, default=10, help="stop once every loop closed this often")
    ap.add_argument("--competing-load", type=int, default=0, metavar="N", help="busy CPU processes beside the platform")
    ap.add_argument("--project", type=Path, default=ROOT / "projects" / "world.toml")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "freshness")
    ap.add_argument("--draft", action="store_true", help="allow a tree with uncommitted changes under bench/results")
    args = ap.parse_args(argv)

    from focuscrawl.experiments.run_record import git_commit, refuse_unpublishable

    code = git_commit(ROOT)
    refuse_unpublishable(args.out, code, args.draft, out_flag="--out")
    os.environ.setdefault("FOCUSCRAWL_VAR", str(ROOT / "var" / "freshness"))
    var = Path(os.environ["FOCUSCRAWL_VAR"])
    from focuscrawl.config import settings

    cfg = settings()
    bench = Bench(cfg, args.project)
    if var.exists():
        bench.focuscrawl("down", timeout=600)
        for child in var.iterdir():
            if child.name != "jars":
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
    var.mkdir(parents=True, exist_ok=True)
    load_before = load()
    burners = competing_load(args.competing_load)
    say(f"focuscrawl up {args.project.name} out of {var}, {args.competing_load} competing busy processes "
        f"(load {load_before})")
    up_at = time.time()
    bench.up()
    watcher = threading.Thread(target=bench.watch, daemon=True)
    watcher.start()
    from focuscrawl.services.airflow import AirflowService

    client = trace = None
    closings: dict = {loop: [] for loop in LOOPS}
    skipped: dict = {}
    deadline = up_at + args.minutes * 60
    try:
        while time.time() < deadline:
            time.sleep(30)
            if bench.up_proc.poll() is not None and bench.up_proc.returncode not in (0, None):
                say(f"`focuscrawl up` exited {bench.up_proc.returncode}: see {var / 'freshness-up.log'}")
                break
            try:
                client = client or AirflowService(cfg).client()
                client.dags()
            except Exception as exc:  # noqa: BLE001 - Airflow not up yet
                say(f"Airflow not readable yet ({type(exc).__name__})")
                continue
            trace = trace or Trace(client, cfg)
            closings, skipped = bench.closings(trace)
            say(f"+{(time.time() - up_at) / 60:.1f} min, load {load()[0]}: closings "
                + ", ".join(f"{l} {len(c)}" for l, c in closings.items()))
            if all(len(c) >= args.closings for c in closings.values()):
                break
        if trace is not None:
            time.sleep(5)  # the last pushes' applications sampled
            for _ in range(3):  # the result's trace: a loop whose tracing failed is traced again
                closings, skipped = bench.closings(trace)
                if not any("trace failed" in why for why in skipped.values()):
                    break
                time.sleep(10)
    finally:
        minutes_run = round((time.time() - up_at) / 60, 1)
        load_after = load()
        bench._stop.set()
        for p in burners:
            p.kill()
            p.wait()
        down = bench.focuscrawl("down", timeout=600)
        if bench.up_proc is not None:
            try:
                bench.up_proc.wait(120)
            except subprocess.TimeoutExpired:
                bench.up_proc.kill()
    from focuscrawl.services.manager import our_processes

    meta = {"what": "loop freshness on the live platform (bench/freshness.py)", **code, "draft": args.draft,
            "started": datetime.fromtimestamp(up_at).astimezone().isoformat(timespec="seconds"), "up_at": up_at,
            "project": str(args.project.relative_to(ROOT)) if args.project.is_relative_to(ROOT) else str(args.project),
            "cpus": os.cpu_count(), "competing_load": args.competing_load, "minutes_run": minutes_run,
            "minutes_limit": args.minutes, "closings_wanted": args.closings,
            "load": {"before": load_before, "after": load_after}, "down_exit": down.returncode,
            "orphans": sorted(map(str, our_processes(cfg)))}
    report = report_of(bench, closings, skipped, meta)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"freshness-load{args.competing_load}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    stem.with_suffix(".md").write_text(markdown(report))
    plot(report, stem.with_suffix(".png"))
    print(markdown(report))
    say(f"written {stem}.json, .md, .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
