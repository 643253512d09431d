"""The standalone cluster's processes, without starting them: ports follow the settings, parallel clusters
(one per engineer or CI run) share no fixed port, and workers register with this master."""

from __future__ import annotations

import dataclasses

from focuscrawl.services.spark_cluster import SparkCluster


def test_every_port_follows_the_master_port_and_rest_is_off(cfg, tmp_path):
    own = dataclasses.replace(cfg, var_dir=tmp_path, spark_master_port=31000)
    cluster = SparkCluster(own, workers=2, worker_cores=1, worker_memory="1g")
    master = cluster.master.command
    assert master[master.index("--port") + 1] == "31000"
    assert master[master.index("--webui-port") + 1] == "31001"
    assert [w.command[w.command.index("--webui-port") + 1] for w in cluster.workers] == ["31002", "31003"]
    assert [w.command[-1] for w in cluster.workers] == [f"spark://{cfg.bind_host}:31000"] * 2
    assert [w.command[w.command.index("--work-dir") + 1] for w in cluster.workers] == [
        str(tmp_path / "spark-cluster" / "worker-0"), str(tmp_path / "spark-cluster" / "worker-1")]
    # The REST submission server would take port 6066 whatever the offset.
    assert "-Dspark.master.rest.enabled=false" in cluster.master.env["SPARK_MASTER_OPTS"]
    assert [p.name for p in cluster.processes] == ["spark-master", "spark-worker-0", "spark-worker-1"]


def test_a_cluster_that_is_down_reports_nothing(cfg, tmp_path):
    own = dataclasses.replace(cfg, var_dir=tmp_path, spark_master_port=1)  # nothing listens on port 2
    cluster = SparkCluster(own, workers=1)
    assert cluster.state() == {} and cluster.alive_workers() == 0 and cluster.completed_apps() == []
    assert not cluster.healthy()
