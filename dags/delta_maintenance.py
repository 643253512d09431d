"""# delta_maintenance: compact and vacuum every Delta table of the lake, daily

One task, **optimize_and_vacuum**, runs delta-rs (`deltalake`, no JVM) over
every Delta table under the lake root (`focuscrawl.lake.maintenance.lake_table_locations`):

1. **OPTIMIZE** (`DeltaTable.optimize.compact()`): the stream consumers append one small file per
   Kafka batch; compaction rewrites them into large files so Spark scans stay fast.
2. **VACUUM** (`DeltaTable.vacuum`): deletes data files no version inside the retention window
   references. Retention is at least 7 days and delta-rs's retention check stays on, so a table
   configured for longer is never vacuumed below its own `delta.deletedFileRetentionDuration`.

delta-rs rather than a Spark job: on these table sizes it finishes in seconds, while spark-submit
alone takes longer than that to start a session. Compaction is an optimistic-concurrency commit,
so it may run while consumers append: on a conflict the task fails and retries with back-off.

Params: `retention_hours` (VACUUM retention, 168 = 7 days minimum). The task log has one line per
table; its XCom is the list of per-table reports (files compacted, files vacuumed, new version).
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Param, dag, task

from common import DEFAULT_ARGS, schedule
from focuscrawl.lake.maintenance import MIN_RETENTION_HOURS


@dag(
    dag_id="delta_maintenance",
    doc_md=__doc__,
    schedule=schedule("delta_maintenance"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=3),
    tags=["focuscrawl", "maintenance", "delta"],
    default_args=DEFAULT_ARGS,
    params={
        "retention_hours": Param(MIN_RETENTION_HOURS, type="integer", minimum=MIN_RETENTION_HOURS,
                                 description="VACUUM keeps files needed by versions this recent (hours, at least 7 days)"),
    },
)
def delta_maintenance():
    @task
    def optimize_and_vacuum(params=None) -> list[dict]:
        from focuscrawl.config import settings
        from focuscrawl.lake.maintenance import lake_table_locations, maintain_table
        from focuscrawl.lake.storage import storage_options

        cfg = settings()
        options = storage_options(cfg) or None
        tables = lake_table_locations(cfg)
        print(f"maintaining {len(tables)} Delta table(s) under {cfg.lake}")
        return [maintain_table(name, location, int(params["retention_hours"]), options).to_dict()
                for name, location in tables.items()]

    optimize_and_vacuum()


delta_maintenance()
