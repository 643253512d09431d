"""A throw-away PostgreSQL cluster for the metadata databases of the scale-out layout (Airflow's, MLflow's).

Debian's ``postgresql`` package (``make sysdeps``): ``initdb`` in a temporary folder, the server on loopback and a
free port with password login, stopped and removed after the session (``postgres_cluster`` in tests/conftest.py).
Each test takes a fresh database of its own.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import free_port


def pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [shutil.which("initdb") or ""]
    if not found[-1]:
        pytest.skip("PostgreSQL server binaries not installed (`make sysdeps` installs Debian's postgresql)")
    return Path(found[-1]).parent


def as_owner(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root (CI), run it as the package's ``postgres`` user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@dataclass(frozen=True)
class PostgresCluster:
    host: str
    port: int
    user: str
    password: str

    def database(self, name: str) -> str:
        """``postgresql+psycopg2://`` URL of a new, empty database ``name`` on the cluster."""
        import psycopg2

        admin = psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                                 dbname="postgres")
        admin.autocommit = True
        admin.cursor().execute(f'CREATE DATABASE "{name}"')
        admin.close()
        return f"postgresql+psycopg2://{self.user}:{self.password}@{self.host}:{self.port}/{name}"


def connect(url: str):
    """A psycopg2 connection to a service's database, from the SQLAlchemy URL it is configured with
    (``postgresql+psycopg2://``, :meth:`PostgresCluster.database`), to read back what the service wrote."""
    import psycopg2

    return psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://", 1))


def running_cluster(cfg):
    """The running cluster, yielded; its superuser ``focuscrawl`` logs in with a random password."""
    # Not under pytest's tmp folder: that one is private to root, and the server runs as ``postgres``.
    bindir, root = pg_bin(), Path(tempfile.mkdtemp(prefix="fc-postgres-"))
    data, password = root / "data", secrets.token_urlsafe(16)
    (root / "pw").write_text(password + "\n")
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for p in (root, root / "pw"):
            os.chown(p, user.pw_uid, user.pw_gid)
    subprocess.run(as_owner([str(bindir / "initdb"), "-D", str(data), "-U", "focuscrawl", "--pwfile", str(root / "pw"),
                             "--auth=scram-sha-256", "-E", "UTF8"]), check=True, capture_output=True, timeout=180)
    port = free_port(cfg.bind_host)
    options = f"-c listen_addresses={cfg.bind_host} -p {port} -k {root}"
    subprocess.run(as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "postgres.log"),
                             "-w", "-t", "120", "start"]), check=True, capture_output=True, timeout=180)
    try:
        yield PostgresCluster(cfg.bind_host, port, "focuscrawl", password)
    finally:
        subprocess.run(as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
                       capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)
