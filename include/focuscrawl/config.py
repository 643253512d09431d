"""Every setting of focuscrawl in one place, read from environment variables.

Nothing else in the code base reads ``os.environ`` for its own settings: components
take plain arguments and the wiring passes ``settings()`` values in (the Scrapy way).

==================================  ==========================================  ============================
variable                            meaning                                     default
==================================  ==========================================  ============================
FOCUSCRAWL_HOME                     project root (holds ``var/``, ``dags/``)    the checkout
FOCUSCRAWL_VAR                      run-time state: logs, broker data, pids      ``$FOCUSCRAWL_HOME/var``
FOCUSCRAWL_JARS                     JVM jars fetched by ``make jars``            ``$FOCUSCRAWL_HOME/var/jars``
FOCUSCRAWL_LAKE                     root of the Delta tables (path or s3://)    ``$FOCUSCRAWL_VAR/lake``
FOCUSCRAWL_S3_ENDPOINT              S3-compatible endpoint of an s3:// lake     AWS S3 itself
FOCUSCRAWL_BIND_HOST                address every service listens on            ``127.0.0.1``
FOCUSCRAWL_PORT_OFFSET              added to every default port (parallel runs) ``0``
FOCUSCRAWL_KAFKA_PORT               broker listener                             ``19092`` + offset
FOCUSCRAWL_KAFKA_CONTROLLER_PORT    KRaft controller listener                   ``19093`` + offset
FOCUSCRAWL_KAFKA_BOOTSTRAP          bootstrap servers (a remote cluster)        the local broker
FOCUSCRAWL_KAFKA_PARTITIONS         partitions of new topics                    ``4``
FOCUSCRAWL_KAFKA_REPLICATION        replication factor of new topics            ``1``
FOCUSCRAWL_KAFKA_HEAP               broker JVM heap                             ``512m``
FOCUSCRAWL_AIRFLOW_PORT             Airflow API server / UI                     ``18080`` + offset
FOCUSCRAWL_AIRFLOW_USER             Airflow login user                          ``admin``
FOCUSCRAWL_AIRFLOW_PASSWORD         its password (else generated, kept in var)  generated
FOCUSCRAWL_AIRFLOW_DB               Airflow metadata DB (SQLAlchemy URL, e.g.   SQLite in var
                                    ``postgresql+psycopg2://u:p@host/airflow``)
FOCUSCRAWL_MLFLOW_PORT              MLflow's tracking server (model registry)   ``18100`` + offset
FOCUSCRAWL_MLFLOW_USER              its admin login                             ``admin``
FOCUSCRAWL_MLFLOW_PASSWORD          its password (else generated, kept in var)  generated
FOCUSCRAWL_MLFLOW_DB                its runs, registry and users (SQLAlchemy    SQLite in var
                                    URL, e.g. ``postgresql+psycopg2://u:p@host/mlflow``)
FOCUSCRAWL_MLFLOW_URL               where clients reach it (another host's)     ``http://`` bind host ``:`` port
FOCUSCRAWL_WORLD_PORT               the world's HTTP server                     ``18090`` + offset
FOCUSCRAWL_WORLD_EVAL_PORT          the world's ground-truth interface          ``18091`` + offset
FOCUSCRAWL_METRICS_PORT             first Prometheus port ``focuscrawl up``     ``18200`` + offset
                                    gives its processes (then upward)
FOCUSCRAWL_SPARK_MASTER             Spark master URL                            ``local[*]``
FOCUSCRAWL_SPARK_MASTER_PORT        standalone cluster master port              ``17077`` + offset
FOCUSCRAWL_SPARK_DRIVER_MEMORY      driver memory                               ``2g``
FOCUSCRAWL_CATALOG_DB               Spark SQL database of the tables            ``focuscrawl``
FOCUSCRAWL_USER_AGENT               crawler user agent                          ``focuscrawl/0.1 (+README)``
FOCUSCRAWL_ALLOW_PRIVATE_HOSTS      hosts/CIDRs the SSRF guard lets through      the world on localhost
FOCUSCRAWL_DATA                     real data folder (``../shared/data``)        beside the checkout if there
==================================  ==========================================  ============================
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _repo_root() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists() and (parent / "include").is_dir():
            return parent
    return Path.cwd()


def _env(name: str, default: str) -> str:
    value = os.environ.get(name)
    return default if value is None or value == "" else value


@dataclass(frozen=True)
class Settings:
    home: Path
    var_dir: Path
    jars_dir: Path
    lake: str
    bind_host: str
    kafka_port: int
    kafka_controller_port: int
    kafka_bootstrap: str
    kafka_partitions: int
    kafka_replication: int
    kafka_heap: str
    airflow_port: int
    airflow_user: str
    # secrets (a password, or a database URL carrying one): left out of repr, so no log or error shows them
    airflow_password: str | None = field(repr=False)
    airflow_db: str | None = field(repr=False)
    world_port: int
    world_eval_port: int
    spark_master: str
    spark_master_port: int
    spark_driver_memory: str
    catalog_db: str
    user_agent: str
    metrics_port: int = 18200
    spark_connect_port: int = 15002
    # Jobs whose input table is at most this many MiB of Parquet run on pandas in their own process instead of on
    # Spark, when they are a client of the warm Spark (focuscrawl.lake.spark.in_process); 0: always on Spark.
    spark_in_process_mib: float = 64.0
    allow_private_hosts: tuple[str, ...] = field(default_factory=tuple)
    data_dir: Path | None = None
    s3_endpoint: str | None = None
    mlflow_port: int = 18100
    mlflow_user: str = "admin"
    mlflow_password: str | None = field(default=None, repr=False)
    mlflow_db: str | None = field(default=None, repr=False)
    mlflow_address: str | None = None  # FOCUSCRAWL_MLFLOW_URL: the server as clients reach it, when not on this host

    @property
    def kafka_jars(self) -> Path:
        return self.jars_dir / "kafka"

    @property
    def spark_jars(self) -> Path:
        return self.jars_dir / "spark"

    @property
    def airflow_url(self) -> str:
        return f"http://{self.bind_host}:{self.airflow_port}"

    @property
    def mlflow_url(self) -> str:
        return (self.mlflow_address or f"http://{self.bind_host}:{self.mlflow_port}").rstrip("/")

    @property
    def world_url(self) -> str:
        return f"http://{self.bind_host}:{self.world_port}"

    @property
    def world_eval_url(self) -> str:
        return f"http://{self.bind_host}:{self.world_eval_port}"

    @property
    def spark_cluster_url(self) -> str:
        return f"spark://{self.bind_host}:{self.spark_master_port}"

    def table_path(self, name: str) -> str:
        """Location of the Delta table ``name`` under the lake root."""
        return f"{self.lake.rstrip('/')}/{name}"


def settings() -> Settings:
    """Read the settings from the environment (cheap; call it where you wire)."""
    home = Path(_env("FOCUSCRAWL_HOME", str(_repo_root()))).resolve()
    var_dir = Path(_env("FOCUSCRAWL_VAR", str(home / "var"))).resolve()
    offset = int(_env("FOCUSCRAWL_PORT_OFFSET", "0"))
    bind = _env("FOCUSCRAWL_BIND_HOST", "127.0.0.1")
    kafka_port = int(_env("FOCUSCRAWL_KAFKA_PORT", str(19092 + offset)))
    world_port = int(_env("FOCUSCRAWL_WORLD_PORT", str(18090 + offset)))
    world_eval_port = int(_env("FOCUSCRAWL_WORLD_EVAL_PORT", str(18091 + offset)))
    data_default = home.parent / "shared" / "data"
    data_dir = Path(_env("FOCUSCRAWL_DATA", str(data_default)))
    return Settings(
        home=home,
        var_dir=var_dir,
        jars_dir=Path(_env("FOCUSCRAWL_JARS", str(home / "var" / "jars"))).resolve(),
        lake=_env("FOCUSCRAWL_LAKE", str(var_dir / "lake")),
        bind_host=bind,
        kafka_port=kafka_port,
        kafka_controller_port=int(_env("FOCUSCRAWL_KAFKA_CONTROLLER_PORT", str(19093 + offset))),
        kafka_bootstrap=_env("FOCUSCRAWL_KAFKA_BOOTSTRAP", f"{bind}:{kafka_port}"),
        kafka_partitions=int(_env("FOCUSCRAWL_KAFKA_PARTITIONS", "4")),
        kafka_replication=int(_env("FOCUSCRAWL_KAFKA_REPLICATION", "1")),
        kafka_heap=_env("FOCUSCRAWL_KAFKA_HEAP", "512m"),
        airflow_port=int(_env("FOCUSCRAWL_AIRFLOW_PORT", str(18080 + offset))),
        airflow_user=_env("FOCUSCRAWL_AIRFLOW_USER", "admin"),
        airflow_password=os.environ.get("FOCUSCRAWL_AIRFLOW_PASSWORD") or None,
        airflow_db=os.environ.get("FOCUSCRAWL_AIRFLOW_DB") or None,
        world_port=world_port,
        world_eval_port=world_eval_port,
        spark_master=_env("FOCUSCRAWL_SPARK_MASTER", "local[*]"),
        spark_master_port=int(_env("FOCUSCRAWL_SPARK_MASTER_PORT", str(17077 + offset))),
        spark_driver_memory=_env("FOCUSCRAWL_SPARK_DRIVER_MEMORY", "2g"),
        catalog_db=_env("FOCUSCRAWL_CATALOG_DB", "focuscrawl"),
        metrics_port=int(_env("FOCUSCRAWL_METRICS_PORT", str(18200 + offset))),
        spark_connect_port=int(_env("FOCUSCRAWL_SPARK_CONNECT_PORT", str(15002 + offset))),
        spark_in_process_mib=float(_env("FOCUSCRAWL_SPARK_IN_PROCESS_MIB", "64")),
        user_agent=_env("FOCUSCRAWL_USER_AGENT", "focuscrawl/0.1 (+https://focuscrawl.invalid/README)"),
        # The embedded default allow-lists only the world's own ports on loopback.
        allow_private_hosts=tuple(
            h.strip()
            for h in _env("FOCUSCRAWL_ALLOW_PRIVATE_HOSTS", f"{bind}:{world_port},{bind}:{world_eval_port}").split(",")
            if h.strip()
        ),
        data_dir=data_dir if data_dir.is_dir() else None,
        # Credentials are not settings: both S3 clients read AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY.
        s3_endpoint=os.environ.get("FOCUSCRAWL_S3_ENDPOINT") or None,
        mlflow_port=int(_env("FOCUSCRAWL_MLFLOW_PORT", str(18100 + offset))),
        mlflow_user=_env("FOCUSCRAWL_MLFLOW_USER", "admin"),
        mlflow_password=os.environ.get("FOCUSCRAWL_MLFLOW_PASSWORD") or None,
        mlflow_db=os.environ.get("FOCUSCRAWL_MLFLOW_DB") or None,
        mlflow_address=os.environ.get("FOCUSCRAWL_MLFLOW_URL") or None,
    )
