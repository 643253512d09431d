"""Delta table upkeep with delta-rs: OPTIMIZE (compact small files) then VACUUM (delete unreferenced files),
and the one repair a quality gate names: :func:`dedupe_table` (``focuscrawl dedup``).

The consumers append one small file per Kafka batch, so every table gathers
thousands of small files that slow every Spark scan; compaction rewrites them into ~256 MB files
and VACUUM removes the files no version inside the retention window still needs. delta-rs does
both without a JVM, in seconds on tables of this size, where a Spark job would first pay the
session start-up. Compaction commits like any writer (optimistic concurrency), so it is safe next
to the running consumers: a conflicting append makes it fail and the task retries.

VACUUM keeps at least :data:`MIN_RETENTION_HOURS` (7 days, Delta's default
``delta.deletedFileRetentionDuration``) and runs with delta-rs's retention check on, so a table
configured for a longer retention is never vacuumed below it: readers on older versions and time
travel within the window keep working.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Sequence

from focuscrawl.config import Settings

log = logging.getLogger(__name__)

MIN_RETENTION_HOURS = 7 * 24


@dataclass(frozen=True)
class MaintenanceReport:
    table: str
    version: int
    files_added: int
    files_removed: int
    files_vacuumed: int

    def to_dict(self) -> dict:
        return asdict(self)


def lake_table_locations(cfg: Settings) -> dict[str, str]:
    """Every Delta table of the lake: found on disk for a local lake, else the declared tables that exist."""
    from focuscrawl.lake import exists, lake_tables
    from focuscrawl.lake.storage import is_object_store
    from focuscrawl.lake.tables import TABLES

    if not is_object_store(cfg.lake):
        return lake_tables(cfg)
    return {name: spec.path(cfg) for name, spec in sorted(TABLES.items()) if exists(spec, cfg)}


def maintain_table(name: str, location: str, retention_hours: int = MIN_RETENTION_HOURS,
                   storage_options: dict[str, str] | None = None) -> MaintenanceReport:
    """OPTIMIZE then VACUUM one table; ``retention_hours`` below 7 days is refused."""
    from deltalake import DeltaTable

    if retention_hours < MIN_RETENTION_HOURS:
        raise ValueError(f"VACUUM retention {retention_hours} h is below the {MIN_RETENTION_HOURS} h minimum")
    dt = DeltaTable(location, storage_options=storage_options)
    compacted = dt.optimize.compact()
    vacuumed = dt.vacuum(retention_hours=retention_hours, dry_run=False, enforce_retention_duration=True)
    report = MaintenanceReport(name, dt.version(), compacted["numFilesAdded"], compacted["numFilesRemoved"],
                               len(vacuumed))
    log.info("%s: OPTIMIZE %d files -> %d, VACUUM (retention %d h) deleted %d files, now version %d",
             name, report.files_removed, report.files_added, retention_hours, report.files_vacuumed, report.version)
    return report


def dedupe_table(location: str, key: Sequence[str], first_by: Sequence[str] = (),
                 storage_options: dict[str, str] | None = None) -> tuple[int, int]:
    """Keep one row per ``key`` (the one that sorts first by ``first_by``, e.g. ``fetched_at``; without it, the
    first in the table's file order) in one overwrite commit, partitioning and schema kept; no commit when no
    key repeats. Returns ``(rows before, rows removed)``. Not for a table being written: the overwrite
    would race a concurrent append (``focuscrawl dedup`` refuses while the platform is up)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable, write_deltalake

    dt = DeltaTable(location, storage_options=storage_options)
    rows = dt.to_pyarrow_table()
    missing = [c for c in (*key, *first_by) if c not in rows.column_names]
    if not key or missing:
        raise ValueError(f"{location}: no column(s) {missing or list(key)}; its columns: {', '.join(rows.column_names)}")
    order = "__focuscrawl_order"
    ranked = rows.append_column(order, pa.array(range(rows.num_rows), pa.int64()))
    if first_by:
        ranked = ranked.sort_by([(c, "ascending") for c in first_by] + [(order, "ascending")])
        ranked = ranked.set_column(ranked.column_names.index(order), order, pa.array(range(rows.num_rows), pa.int64()))
    kept = ranked.group_by(list(key), use_threads=False).aggregate([(order, "min")])[f"{order}_min"]
    removed = rows.num_rows - len(kept)
    if removed:
        keep = ranked.filter(pc.is_in(ranked[order], value_set=kept)).drop_columns([order])
        write_deltalake(location, keep, mode="overwrite",
                        partition_by=dt.metadata().partition_columns or None, storage_options=storage_options)
        log.info("%s: kept one row per %s, removed %d of %d rows", location, list(key), removed, rows.num_rows)
    return rows.num_rows, removed
