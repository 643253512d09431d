"""When a live platform's loop closed after a moment: the one test of a closing that the live platform's end-to-end
test (tests/platform/test_platform_e2e.py) and the chaos campaign (tests/reliability/chaos.py) both ask."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def closed_after(cfg, client, loop: str, after: float) -> tuple[float, str] | None:
    """When (epoch s) and how ``loop`` first closed after ``after``; None while it has not. A run of the loop's
    pushing DAG (the last of ``focuscrawl.platform.up.LOOP_DAGS[loop]``) that started after ``after`` succeeded,
    and the loop's following process (``focuscrawl.cli.demo.FOLLOWERS``) applied a push whose records were sent
    after that run started (its status document's ``applied_pushes``: a restarted follower re-reading older
    pushes does not count). The graph loop, which no process follows, closes when that run ends. ``client`` is
    Airflow's (``AirflowService(cfg).client()``)."""
    from focuscrawl.cli.demo import FOLLOWERS
    from focuscrawl.core.status_file import read_status
    from focuscrawl.platform.up import LOOP_DAGS

    dag = LOOP_DAGS[loop][-1]
    since = datetime.fromtimestamp(after).astimezone().isoformat()
    runs = sorted((_epoch(r["start_date"]), _epoch(r["end_date"]), r["dag_run_id"])
                  for r in client.dag_runs(dag, state=["success"], start_date_gte=since)
                  if r.get("start_date") and r.get("end_date") and _epoch(r["start_date"]) > after)
    if not runs:
        return None
    if loop not in FOLLOWERS:
        began, ended, run_id = runs[0]
        return ended, f"{dag} {run_id} succeeded"
    paths = sorted((Path(cfg.var_dir) / "status").glob(f"{FOLLOWERS[loop][0]}*.json"))[:1]
    pushes = (read_status(paths[0]).get("applied_pushes") or []) if paths else []
    late = [(p["last_applied_ms"] / 1000, p["records"], [r for b, _, r in runs if b <= p["first_record_ms"] / 1000][-1])
            for p in pushes if p.get("last_applied_ms") and p["first_record_ms"] / 1000 >= runs[0][0]]
    if not late:
        return None
    applied, records, run_id = min(late)
    return applied, f"a push of {records} records applied after {dag} {run_id}"
