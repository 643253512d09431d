"""Where the running interpreter's tools are: its venv's ``bin`` (``airflow``, ``spark-submit``,
``pyspark``), a PATH with it first, and pyspark's package folder as SPARK_HOME.

Plain lookups, no process is started: the Spark session factory (``focuscrawl.lake.spark``), the
services that start Airflow and a Spark cluster (``focuscrawl.services``) and the CLI all read them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path


def venv_bin() -> Path:
    """The bin folder of the running interpreter's venv (``airflow``, ``spark-submit``, ``pyspark``)."""
    return Path(sys.executable).parent


def path_with_venv() -> str:
    """PATH with the venv's bin first: Airflow's SparkSubmitHook and the task runner look tools up there."""
    return os.pathsep.join([str(venv_bin()), os.environ.get("PATH", "/usr/bin:/bin")])


def spark_home() -> str:
    """pyspark's package folder is a full SPARK_HOME (bin/spark-submit, bin/spark-class, jars/)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyspark is not installed in this interpreter; run `make setup`")
    return str(list(spec.submodule_search_locations)[0])
