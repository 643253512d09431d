"""Asset events from the lake: tell Airflow when a table the stream side lands got new rows.

    python streaming/asset_events.py [--interval 5] [--min-interval 60] [--dag-min-interval DAG=SECONDS ...]
                                     [--status-file F] [--metrics-port N]

Wiring only (``focuscrawl.orchestration.asset_events`` decides what to watch and when to post): logs in to the
configured Airflow (``FOCUSCRAWL_AIRFLOW_*``, the password ``focuscrawl services up`` keeps), then
polls the watched tables' Delta versions until SIGTERM. The watch list is re-read every
``--refresh`` seconds, so DAGs parsed after the start are picked up. Each pass also releases an asset-scheduled
DAG Airflow holds back with no run active (``LakeEventPoster.release_held``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from pathlib import Path

from focuscrawl.config import settings
from focuscrawl.orchestration.asset_events import MIN_INTERVAL, STATE_FILE, LakeEventPoster
from focuscrawl.services.airflow import AirflowService
from focuscrawl.core.status_file import write_status
from focuscrawl.core.signals import set_on_signals
from focuscrawl.lake.storage import storage_options


def _dag_seconds(text: str) -> tuple[str, float]:
    dag_id, sep, seconds = text.partition("=")
    try:
        if sep and dag_id and float(seconds) > 0:
            return dag_id, float(seconds)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r}: write DAG=SECONDS with SECONDS > 0, e.g. graph_estimation=600")


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interval", type=float, default=5.0, help="seconds between two looks at the tables")
    ap.add_argument("--min-interval", type=float, default=MIN_INTERVAL,
                    help="least seconds between two events that start one DAG (default: %(default)s)")
    ap.add_argument("--dag-min-interval", type=_dag_seconds, action="append", default=[], metavar="DAG=SECONDS",
                    help="--min-interval for one DAG (the project's [asset_events.min_interval]); repeatable")
    ap.add_argument("--refresh", type=float, default=60.0, help="seconds between two reads of the watch list")
    ap.add_argument("--state-file", type=Path, default=Path(cfg.var_dir) / STATE_FILE)
    ap.add_argument("--status-file", type=Path, default=Path(cfg.var_dir) / "status" / "asset-events.json")
    ap.add_argument("--metrics-port", type=int, default=0, help="Prometheus endpoint on 127.0.0.1 (0: off)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    stopping = threading.Event()
    set_on_signals(stopping)  # from a helper thread: Event.set in the handler can deadlock stopping.wait()
    if args.metrics_port:
        from prometheus_client import start_http_server

        from focuscrawl.stream.metrics import Metrics

        start_http_server(args.metrics_port, addr="127.0.0.1", registry=Metrics("asset-events").registry)

    poster = LakeEventPoster(AirflowService(cfg).client(), args.state_file, args.min_interval,
                             storage_options(cfg) or None, dag_min_interval=dict(args.dag_min_interval))
    refreshed = float("-inf")
    error = None
    while not stopping.is_set():
        try:
            if time.monotonic() - refreshed >= args.refresh or not poster.assets:
                poster.refresh()
                refreshed = time.monotonic()
            poster.poll()
            poster.release_held()
            error = None
        except Exception as exc:  # Airflow restarting or a table mid-commit: report, keep going
            error = f"{type(exc).__name__}: {exc}"[:500]
            logging.getLogger("focuscrawl.orchestration.asset_events").warning("pass failed: %s", error)
        write_status(args.status_file, {**poster.status(), "last_error": error, "updated_at": time.time()})
        stopping.wait(args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
