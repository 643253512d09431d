"""Helpers shared by the test folders (``tests/`` is on the path, as for ``stream_positions``).

- :class:`HttpSite`: one local HTTP site on a loopback port, for every test that needs real HTTP
  without the world (the fetch layer, the listing crawler, graph access, the revisitor process).
- :func:`parse_dags`: DAG files parsed offline as the DAG processor does, no running Airflow; the
  ``dag_bag`` fixture of ``tests/conftest.py`` caches it per file for a run.
- :func:`load_module` and :func:`main_parser`: a product file as a module, and the argument parser
  its ``main`` builds, read without running the program.
- :func:`outlinks_job_inputs` and :func:`write_outlinks_job_inputs`: the related-pages and training jobs'
  input tables for a small synthetic site, with numpy's exact neighbours to check the jobs against.
- :func:`fetch_spec`: a stream process's ``--fetch-spec`` file for a site at a URL (what the platform's
  plan writes for a project's site), for the tests that start one process by hand.
- :func:`mlflow_login_is_required`: an MLflow server of ours answers its API to its admin only.
- :func:`free_port`: a port no one listens on now, for a server a test starts outside the offset's ports.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
DAGS = ROOT / "dags"

Answer = tuple[int, dict, bytes]  # status, headers, body


class HttpSite:
    """A site on ``127.0.0.1`` at a free port, serving GETs from ``routes`` in its own threads.

    ``routes``: exact path (query included) -> ``(status, headers, body)`` or ``callable(handler)``
    returning that tuple; any other path goes to ``default`` (a callable like a route), else 404.
    ``Content-Type`` defaults to text/plain and ``Content-Length`` to the body's. Every request is
    logged as ``(self.clock() at arrival, path)``; ``max_in_flight`` is the most answered at once.
    Stop it with ``stop()`` or use it as a context manager.
    """

    def __init__(self, routes: dict | None = None, default: Callable[[BaseHTTPRequestHandler], Answer] | None = None) -> None:
        self.routes: dict = dict(routes or {})
        self.default = default
        self.clock = time.monotonic  # what arrival times are read from (a test's FakeClock: its time)
        self.log: list[tuple[float, str]] = []  # (time at arrival, path)
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                with site.lock:
                    site.log.append((site.clock(), self.path))
                    site.in_flight += 1
                    site.max_in_flight = max(site.max_in_flight, site.in_flight)
                try:
                    route = site.routes.get(self.path, site.default or (404, {}, b"not found"))
                    status, headers, body = route(self) if callable(route) else route
                finally:
                    # Counted as served once the response is ready: the client may read it and send
                    # its next request before this thread gets back from writing.
                    with site.lock:
                        site.in_flight -= 1
                self.send_response(status)
                headers = {"Content-Type": "text/plain", **headers}
                for k, v in headers.items():
                    self.send_header(k, v)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.host = f"127.0.0.1:{self.port}"  # what FOCUSCRAWL_ALLOW_PRIVATE_HOSTS / AddressGuard allow
        self.url = f"http://{self.host}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def paths(self) -> list[str]:
        return [p for _, p in self.log]

    def times(self, path: str) -> list[float]:
        return [t for t, p in self.log if p == path]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "HttpSite":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


# The longest a unit test waits on a child process it started: `make test` runs the unit phase at nice 19 beside
# the integration phase, where a child can get a few percent of a core for minutes (a probe that starts in 0.6 s
# idle outlasted 30 s in the CI of stop 53). These bound a hang; speed is measured in bench/, never here.
CHILD_TIMEOUT = 300.0


def free_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` the kernel gave no one now (bound and released: a race another process may win, which
    the tests that use it accept)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def parse_dags(dag_file: str | Path | None = None) -> dict:
    """``{dag_id: DAG}`` of one DAG file of ``dags/`` (a name such as ``"outlinks.py"``, or a path), or of
    the whole folder; fails on any import error. Parsed with ``BundleDagBag`` (``from assets import ...``
    resolves), with a 300 s import timeout: pandas, pyspark's helpers and GX can outlast the 30 s default
    on a busy CI box."""
    from airflow.dag_processing.dagbag import BundleDagBag

    folder = DAGS if dag_file is None else DAGS / dag_file
    previous = os.environ.get("AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT")
    os.environ["AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT"] = "300"
    try:
        bag = BundleDagBag(dag_folder=str(folder), bundle_path=DAGS)
    finally:
        if previous is None:
            os.environ.pop("AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT")
        else:
            os.environ["AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT"] = previous
    assert bag.import_errors == {}, f"{Path(folder).name} does not import: {bag.import_errors}"
    return bag.dags


def load_module(path: Path):
    """A file of the product as a module: by its dotted name under ``include/``, else loaded from its
    path with its folder on ``sys.path``, as ``python <path>`` runs it (a benchmark imports its neighbours)."""
    path = Path(path).resolve()
    if path.is_relative_to(ROOT / "include"):
        return importlib.import_module(".".join(path.relative_to(ROOT / "include").with_suffix("").parts))
    name = "_product_" + re.sub(r"\W", "_", str(path.relative_to(ROOT)))
    if name not in sys.modules:
        if str(path.parent) not in sys.path:
            sys.path.append(str(path.parent))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def main_parser(main, argv: list[str] | None = None) -> argparse.ArgumentParser | None:
    """The parser ``main(argv)`` parses its arguments with, stopped right there (nothing else of the
    program runs); None when ``main`` returns or exits without parsing any."""
    import pytest

    def capture(self, *args, **kwargs):
        raise _Parsed(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(argparse.ArgumentParser, "parse_args", capture)
        mp.setattr(argparse.ArgumentParser, "parse_known_args", capture)
        try:
            main([] if argv is None else argv)
        except _Parsed as parsed:
            return parsed.parser
        except SystemExit:
            pass
    return None


def fetch_spec(folder: Path, base_url: str, politeness_delay: float, pace: float = 0.0, **site) -> str:
    """Write a :class:`~focuscrawl.stream.spec.FetchSpec` for a site at ``base_url`` into ``folder``; its path.
    ``site`` sets other fields of the site (``name``, ``strip_params``, ``scope``, ...)."""
    from focuscrawl.project.model import Site
    from focuscrawl.stream.spec import FetchSpec

    fields = {"name": "test", "user_agent": "focuscrawl-test/1 (+mailto:ops@example.org)", **site}
    spec = FetchSpec(site=Site(base_url=base_url, politeness_delay=politeness_delay, **fields), pace=pace)
    return str(spec.write(Path(folder) / f"{fields['name']}.fetch.json"))


def outlinks_job_inputs(k: int, history_size: int):
    """Embeddings and features of a small synthetic site, plus its k related pages computed in numpy:
    ``(embeddings, features, reference)``, for the tests that run the related-pages and training jobs."""
    import numpy as np
    import pandas as pd

    from focuscrawl.outlinks.embedding import LsaEmbedder
    from focuscrawl.outlinks.features import build_features
    from focuscrawl.outlinks.related import related_pages
    from focuscrawl.outlinks.synthetic import generate_snapshots
    from focuscrawl.outlinks.targets import targets

    snapshots = generate_snapshots(n_pages=150, n_periods=6, n_topics=6, n_sites=6, words_per_page=40, seed=11)
    # Vectors of the texts strictly before the held-out (last) period, as spark_jobs/outlinks_embed.py
    # builds them: outlinks_train refuses later ones (outlinks.leakage).
    seen = snapshots[snapshots["period"] < snapshots["period"].max()]
    latest = seen.sort_values("period").groupby("url").tail(1).sort_values("url", ignore_index=True)
    vectors = LsaEmbedder(dimensions=16, seed=0).fit(latest["text"].tolist()).transform(latest["text"].tolist())
    embeddings = pd.DataFrame({"url": latest["url"], "as_of_period": latest["period"].astype("int32"),
                               "vector": list(vectors.astype(np.float32))})
    idx, sims = related_pages(vectors.astype(np.float32), "EXACT", k=k)
    urls = latest["url"].to_numpy(dtype=object)
    reference = pd.DataFrame({"url": np.repeat(urls, k), "neighbour": urls[idx.ravel()],
                              "rank": np.tile(np.arange(1, k + 1), len(urls)), "similarity": sims.ravel()})
    features = build_features(snapshots, targets(snapshots), reference, history_size=history_size)
    features["period"] = features["period"].astype("int32")
    return embeddings, features, reference


def write_outlinks_job_inputs(cfg, embeddings, features) -> None:
    """The jobs' input tables (``page_embeddings``, ``outlink_features``) on ``cfg``'s lake."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from focuscrawl.outlinks.tables import EMBEDDINGS, FEATURES

    write_deltalake(EMBEDDINGS.path(cfg), pa.Table.from_pandas(embeddings, schema=EMBEDDINGS.arrow_schema(),
                                                               preserve_index=False))
    write_deltalake(FEATURES.path(cfg), pa.Table.from_pandas(features, preserve_index=False), partition_by=["period"])


def mlflow_login_is_required(server) -> None:
    """``server`` (``focuscrawl.services.mlflow.MlflowServer``, running) refuses its API without a login and with a
    wrong password (401), and serves it to its admin."""
    import requests

    from focuscrawl.services.mlflow import credentials

    user, password = credentials(server.cfg)
    url = server.url + "/api/2.0/mlflow/registered-models/search"
    assert requests.get(url, timeout=10).status_code == 401
    assert requests.get(url, auth=(user, "not-" + password), timeout=10).status_code == 401
    assert requests.get(url, auth=(user, password), timeout=10).status_code == 200
