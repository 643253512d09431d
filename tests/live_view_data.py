"""A small, realistic state of a running platform for the focuscrawl view's tests, written where ``focuscrawl
status`` reads it: the supervisor's ``state.json`` and ``specs.json`` (from its own ``ProcessState`` records),
the source crawler's and the revisitor's status files (their own status keys, with the metrics snapshot of
:class:`focuscrawl.stream.metrics.Metrics`), and Delta tables created from their table specs
(``source_pages`` with relevance over three 10-minute bins, ``source_recrawls`` with the schedule pushes that
chose them). Not a live platform: its processes are records, their pids not running."""

from __future__ import annotations

import shutil
from dataclasses import asdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa

T0 = datetime.now(timezone.utc).replace(second=0, microsecond=0) - timedelta(minutes=30)
PUSHES_APPLIED = 2
ERROR_LINE = "requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=1): refused"


def _append(cfg, spec, rows: list[dict]) -> None:
    from deltalake import write_deltalake

    from focuscrawl.lake import ensure_table

    schema = spec.arrow_schema()
    blank = {f.name: None if f.nullable else ("" if pa.types.is_string(f.type) else 0) for f in schema}
    ensure_table(cfg.table_path(spec.name), spec)
    write_deltalake(cfg.table_path(spec.name), pa.Table.from_pylist([blank | r for r in rows], schema=schema),
                    mode="append")


def paths(cfg) -> list[Path]:
    """What :func:`write` writes and every other table the view reads (harvest, what chose a fetch), so that a
    session's var shows the view this state alone (:class:`Aside` takes each aside first and puts it back after)."""
    from focuscrawl.relevance.harvest import LOOPS
    from focuscrawl.reports.live_view import CHOSEN_IN

    var = Path(cfg.var_dir)
    tables = dict.fromkeys(["source_pages", "source_recrawls", *(p.table for p in LOOPS.values()),
                            *CHOSEN_IN.values()])
    return [var / "platform" / "state.json", var / "platform" / "specs.json", var / "status" / "source-crawler.json",
            var / "status" / "revisitor.json", *(Path(cfg.table_path(t)) for t in tables)]


def write(cfg) -> None:
    from focuscrawl.core.status_file import write_status
    from focuscrawl.ephemeral.tables import SOURCE_PAGES, SOURCE_RECRAWLS
    from focuscrawl.platform.supervisor import ProcessState
    from focuscrawl.stream.metrics import Metrics

    var = Path(cfg.var_dir)
    procs = [ProcessState("source-crawler", "crawler", "sources", "running", pid=None, restarts=1, health="ok",
                          last_exit=1, last_error=["Traceback (most recent call last):", ERROR_LINE],
                          status_file=str(var / "status" / "source-crawler.json")),
             ProcessState("consumer-source_pages", "consumer", "sources", "running", health="ok"),
             ProcessState("revisitor", "crawler", "revisits", "backoff", restarts=3, health="unknown",
                          status_file=str(var / "status" / "revisitor.json"))]
    write_status(var / "platform" / "state.json", {"supervisor": {"pid": None, "running": False},
                                                   "processes": [asdict(p) for p in procs]})
    write_status(var / "platform" / "specs.json", {"specs": [
        {"name": "consumer-source_pages", "loop": "sources",
         "meta": {"sink": "source_pages", "topic": "source-pages", "group": "focuscrawl-source_pages",
                  "table": "source_pages"}}]})
    metrics = Metrics("source-crawler")
    scored = metrics.page_scored("sources")
    for relevance in (0.9, 0.7, 0.2, 0.1, 0.8, 0.9, 0.6):  # the pages of source_pages below, as scored live
        scored(relevance >= 0.5)
    write_status(var / "status" / "source-crawler.json",
                 {"recrawls": 14, "pages": 7, "sources": 4, "errors": 1, "schedules_applied": PUSHES_APPLIED,
                  "intervals": {"/s/a": 60.0, "/s/b": 300.0}, "metrics": metrics.snapshot()})
    write_status(var / "status" / "revisitor.json", {"revisits": 5, "known": 40, "priorities_applied": 0,
                                                     "order": [["/p/1", 0.9]], "metrics": {}})
    pages = [(1, 0.9), (2, 0.7), (3, 0.2), (12, 0.1), (14, 0.8), (25, 0.9), (26, 0.6)]
    _append(cfg, SOURCE_PAGES, [{"page_url": f"/p{m}", "source_url": "/s/a", "host": "h",
                                 "fetched_at": T0 + timedelta(minutes=m), "relevance": r} for m, r in pages])
    recrawls = [(2, None, None), (11, "source_schedule", 1), (13, "source_schedule", 1), (24, "source_schedule", 2)]
    _append(cfg, SOURCE_RECRAWLS, [{"source_url": "/s/a", "host": "h", "recrawled_at": T0 + timedelta(minutes=m),
                                    "elapsed_s": 60.0, "new_links": 2, "chosen_by_loop": "sources",
                                    "chosen_by_method": "LAGRANGE", "chosen_by_model": model,
                                    "chosen_by_model_version": version} for m, model, version in recrawls])


class Aside:
    """Takes what :func:`write` would overwrite aside, and puts it back on :meth:`restore`."""

    def __init__(self, cfg, folder: Path) -> None:
        self.moved: dict[Path, Path] = {}
        self.cfg, self.folder = cfg, folder
        for i, path in enumerate(paths(cfg)):
            if path.exists():
                self.moved[path] = folder / f"{i}-{path.name}"
                shutil.move(str(path), self.moved[path])

    def restore(self) -> None:
        for path in paths(self.cfg):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        for path, aside in self.moved.items():
            shutil.move(str(aside), path)


# -- steering from the view (tests/ui/test_live_view.py, tests/ui/test_live_view_kafka.py) ------

PROJECT = """name = "t"
target = "sites"
[profile]
positives = "pos.jsonl"
negatives = "neg.csv"
[[sites]]
name = "w"
base_url = "https://w.example"
user_agent = "t/1 (+mailto:ops@example.org)"
[loops.fue]
enabled = false
[loops.sources]
enabled = false
[loops.revisits]
site = "w"
seeds = ["https://w.example/a"]
"""


def activate_project(cfg, folder: Path) -> Path:
    """:data:`PROJECT` written in ``folder`` and made ``cfg``'s active project (what `focuscrawl up` leaves in
    ``<var>/run/project.json``, where the steering commands look); returns the file the active project is."""
    import json

    from focuscrawl.project.loading import load_project

    project = folder / "t.toml"
    project.write_text(PROJECT)
    (folder / "pos.jsonl").write_text('{"user": "a", "text": "so tired"}\n')
    (folder / "neg.csv").write_text("author,title\nc,game night\n")
    active = Path(cfg.var_dir) / "run" / "project.json"
    active.parent.mkdir(parents=True, exist_ok=True)
    active.write_text(json.dumps({**load_project(project).to_json(), "project_file": str(project)}))
    return active


def steering_client(cfg, tmp_path, admin_name: str = "ada"):
    """The focuscrawl view's app over an active project written in ``cfg``'s var (revisits on site w), with users
    by bearer token: ``admin_name`` an admin, ``vic`` not."""
    from fastapi import Header, HTTPException
    from fastapi.testclient import TestClient

    from focuscrawl.reports import live_view

    activate_project(cfg, tmp_path)

    def auth(authorization: str | None = Header(None)):
        if authorization not in (f"Bearer {admin_name}", "Bearer vic"):
            raise HTTPException(401, "Not authenticated")

    def admin(authorization: str | None = Header(None)):
        return admin_name if authorization == f"Bearer {admin_name}" else None

    return TestClient(live_view.app(auth, admin), base_url="http://airflow.test")


def as_user(name: str) -> dict:
    return {"Authorization": f"Bearer {name}"}
