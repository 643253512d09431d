"""A local S3-compatible object store (moto's server mode) holding an ``s3://`` lake.

It stands in for AWS S3 or MinIO on one machine: ``FOCUSCRAWL_LAKE=s3://focuscrawl/lake`` and
``FOCUSCRAWL_S3_ENDPOINT=http://127.0.0.1:19000`` make the consumers (delta-rs) and Spark (s3a)
keep the lake there (see :mod:`focuscrawl.lake.storage`). The server listens on the endpoint's address
and keeps objects in memory, so the lake lasts as long as the process: enough for tests and demos,
not for data worth keeping. moto accepts any credentials, but the clients still sign requests, so
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` must be set (any value).
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlparse

from focuscrawl.config import Settings
from focuscrawl.services.process import ManagedProcess, port_open, wait_until
from focuscrawl.lake.storage import is_object_store

LOCAL_HOSTS = ("127.0.0.1", "localhost", "0.0.0.0", "::1")


class ObjectStore:
    name = "object-store"

    def __init__(self, cfg: Settings) -> None:
        if not cfg.s3_endpoint or not is_object_store(cfg.lake):
            raise ValueError(
                "the local object store serves an s3:// lake at a local endpoint; set e.g. "
                "FOCUSCRAWL_LAKE=s3://focuscrawl/lake FOCUSCRAWL_S3_ENDPOINT=http://127.0.0.1:19000"
            )
        endpoint = urlparse(cfg.s3_endpoint)
        if endpoint.hostname not in (*LOCAL_HOSTS, cfg.bind_host) or endpoint.port is None:
            raise ValueError(f"FOCUSCRAWL_S3_ENDPOINT={cfg.s3_endpoint} is not a host:port on this machine")
        self.cfg = cfg
        self.host, self.port = endpoint.hostname, endpoint.port
        self.bucket = urlparse(cfg.lake).netloc
        self.process = ManagedProcess(
            name=self.name, run_dir=Path(cfg.var_dir) / "run", log_dir=Path(cfg.var_dir) / "logs",
            command=[sys.executable, "-m", "moto.server", "-H", self.host, "-p", str(self.port)],
        )
        self.processes = {self.name: self.process}

    @property
    def url(self) -> str:
        return self.cfg.s3_endpoint

    def _client(self):
        import boto3  # moto's own dependency

        # Credentials come from the environment as for every S3 client here; a local server has no region.
        return boto3.client("s3", endpoint_url=self.url, region_name="us-east-1")

    def start(self, timeout: float = 90.0) -> None:
        if not self.healthy():
            self.process.start()
            wait_until(lambda: port_open(self.host, self.port), timeout, f"object store on {self.url}",
                       log=self.process)
        self.ensure_bucket()

    def ensure_bucket(self) -> None:
        client = self._client()
        names = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
        if self.bucket not in names:
            client.create_bucket(Bucket=self.bucket)

    def stop(self) -> bool:
        return self.process.stop()

    def healthy(self) -> bool:
        return self.process.running() and port_open(self.host, self.port)
