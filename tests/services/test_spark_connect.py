"""The warm Spark (``focuscrawl.services.spark_connect``): one Spark Connect server that DAG tasks are clients of.

Over the real server: a task's operator (:class:`SparkConnectJobOperator`, as the DAGs build it) runs the
related-pages and training jobs on it with no JVM of its own, their Delta tables equal to numpy's exact
neighbours; the server admits only its token, keeps the token off its command line, and a second
job on the warm server costs a fraction of the first.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from focuscrawl.outlinks.tables import MODELS, RELATED_PAGES
from focuscrawl.services.process import settings_env
from focuscrawl.services.spark_connect import connection, token_file
from helpers import outlinks_job_inputs, write_outlinks_job_inputs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

K, HISTORY, MODEL = 5, 2, "NNL-ET_LBLA"


def in_a_process_of_its_own(code: str, env: dict | None = None) -> str:
    """Run ``code`` as a task's process would (the suite's own process holds a classic session, and pyspark
    admits no remote session beside one); returns its stdout, failing with its stderr."""
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **(env or {})}, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def count_on(url: str) -> str:
    code = ("from pyspark.sql import SparkSession\n"
            "try:\n"
            f"    print(SparkSession.builder.remote({url!r}).getOrCreate().range(3).count())\n"
            "except Exception as exc:\n"
            "    print('refused', str(exc).replace(chr(10), ' ')[:300])\n")
    return in_a_process_of_its_own(code).strip()


def test_only_the_token_is_admitted_and_it_is_on_no_command_line(warm_spark, cfg):
    token = connection(cfg)["password"]
    assert oct(token_file(cfg).stat().st_mode & 0o777) == "0o600"
    argv = (open(f"/proc/{warm_spark.process.pid()}/cmdline").read()).replace("\0", " ")
    assert token not in argv and "spark.connect.grpc.binding.address=" + cfg.bind_host in argv
    port = cfg.spark_connect_port
    assert count_on(f"sc://localhost:{port}/;token=not-{token}").startswith("refused")
    assert "UNAUTHENTICATED" in count_on(f"sc://localhost:{port}/;token=not-{token}")
    assert count_on(f"sc://localhost:{port}").startswith("refused")
    assert count_on(f"sc://localhost:{port}/;token={token}") == "3"


def test_dag_tasks_run_their_jobs_on_the_warm_spark(warm_spark, cfg, tmp_path):
    from deltalake import DeltaTable

    embeddings, features, reference = outlinks_job_inputs(K, HISTORY)

    # The task's process sees the settings a worker of `services up`'s Airflow sees, on a lake of its own, with every
    # job on Spark (150 pages would otherwise run in the task's process: focuscrawl.lake.spark.in_process).
    run_cfg = dataclasses.replace(cfg, var_dir=tmp_path, lake=str(tmp_path / "lake"), spark_in_process_mib=0)
    env = {**settings_env(run_cfg), "AIRFLOW_CONN_SPARK_CONNECT_DEFAULT": json.dumps(connection(cfg))}
    write_outlinks_job_inputs(run_cfg, embeddings, features)
    steps = [["outlinks_related.py", "--k", str(K)], ["outlinks_related.py", "--k", str(K)],
             ["outlinks_train.py", "--models", MODEL, "--history-size", str(HISTORY)]]
    code = f"""
import time, psutil
from focuscrawl.orchestration.spark_task import SparkConnectJobOperator
for steps in {steps!r}:
    began = time.monotonic()
    SparkConnectJobOperator(task_id="t", jobs_dir={str(cfg.home / "spark_jobs")!r}, steps=steps).execute({{}})
    print("took", time.monotonic() - began)
# No JVM in the task: the client only (a classic session would have started one as this process's child).
print("java children", [p.pid for p in psutil.Process().children(recursive=True) if "java" in p.name()])
"""
    out = in_a_process_of_its_own(code, env)
    assert "java children []" in out
    took = [float(line.split()[1]) for line in out.splitlines() if line.startswith("took ")]
    print(f"outlinks_related on the warm Spark: first {took[0]:.1f} s, again {took[1]:.1f} s; train {took[2]:.1f} s")

    keys = ["url", "rank"]
    got = DeltaTable(RELATED_PAGES.path(run_cfg)).to_pandas().sort_values(keys, ignore_index=True)
    want = reference.sort_values(keys, ignore_index=True)
    assert len(got) == 150 * K
    assert got["neighbour"].tolist() == want["neighbour"].tolist()
    np.testing.assert_allclose(got["similarity"], want["similarity"], rtol=0, atol=1e-5)
    models = DeltaTable(MODELS.path(run_cfg)).to_pandas()
    assert len(models) and all(n.startswith(MODEL) for n in models["name"]) and models["spearman"].notna().all()


WORKER_STATE_JOB = '''
def main(argv):
    from focuscrawl.lake.spark import get_session

    def state(batches):
        import sys
        import pandas as pd
        warm = "focuscrawl.outlinks.spark_transforms" in sys.modules  # imported by an earlier task or the warm-up
        import focuscrawl.outlinks.spark_transforms  # noqa: F401
        for batch in batches:
            yield pd.DataFrame({"warm": [warm] * len(batch)})

    rows = get_session().range(2, numPartitions=1).mapInPandas(state, "warm boolean").collect()
    print("worker warm", sorted({row.warm for row in rows}))
    return 0
'''


def test_tasks_share_the_jobs_session_and_its_python_workers_and_a_closed_one_is_renewed(warm_spark, cfg, tmp_path):
    """The warm-up has run on the server's start; a session the server closed is replaced by the next task (a
    process of its own, as Airflow runs it), whose Python worker is new and cold, and the next task, another
    process, runs its ``mapInPandas`` in that worker, warm: the tasks share the session's workers."""
    import re
    import shutil

    from focuscrawl.services.process import wait_until
    from focuscrawl.services.spark_connect import jobs_session

    jobs = tmp_path / "jobs"
    jobs.mkdir()
    shutil.copy(cfg.home / "spark_jobs" / "chain.py", jobs)
    (jobs / "worker_state.py").write_text(WORKER_STATE_JOB)
    env = {**settings_env(cfg), "AIRFLOW_CONN_SPARK_CONNECT_DEFAULT": json.dumps(connection(cfg))}
    task = ("from focuscrawl.orchestration.spark_task import SparkConnectJobOperator\n"
            f"SparkConnectJobOperator(task_id='t', jobs_dir={str(jobs)!r}, steps=['worker_state.py']).execute({{}})\n")

    def worker_state() -> str:
        return next(line for line in in_a_process_of_its_own(task, env).splitlines() if line.startswith("worker warm"))

    log = cfg.var_dir / "logs" / "spark-connect-warm-up.log"
    wait_until(lambda: log.exists() and re.search(r"warm-up: Python workers \[[\d, ]+\] imported", log.read_text()),
               300, "the warm Spark's warm-up did not finish")
    # (Whether this first task finds a warm worker is not asserted: in the CI of 7be0750, on the suite's shared
    # server after the other tests' tasks, it found a cold one; the renewed session below is this test's own.)
    worker_state()
    session = jobs_session(cfg)

    # The server closes the session (as it does one idle past its timeout): the next task opens a new one.
    token = connection(cfg)["password"]
    in_a_process_of_its_own("from pyspark.sql import SparkSession\n"
                            f"SparkSession.builder.remote('{warm_spark.url}/;token={token};session_id={session}')"
                            ".create().stop()\n")
    assert worker_state() == "worker warm [False]"  # a new session's worker: the server keys them by session
    assert jobs_session(cfg) != session
    assert worker_state() == "worker warm [True]"
