"""Every Delta table of focuscrawl is declared once as a :class:`TableSpec`: name, comment, typed columns.

Areas declare their tables in their own modules with :func:`table` (so the spec sits beside the code
that writes it); Spark SQL, the consumers and the data-quality suites all read the same spec.
Comments travel inside the Delta log (table description, column ``comment`` metadata), so
``DESCRIBE TABLE focuscrawl.x`` shows them wherever the table is registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from focuscrawl.config import Settings

TABLES: dict[str, "TableSpec"] = {}


@dataclass(frozen=True)
class Column:
    """One typed column. ``bounds``: the inclusive ``(low, high)`` its values must stay in (a probability,
    a percentile: ``UNIT_INTERVAL``), which the data-quality suite checks (``focuscrawl.lake.quality``)."""

    name: str
    type: pa.DataType
    comment: str
    nullable: bool = True
    bounds: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.bounds is not None and not self.bounds[0] <= self.bounds[1]:
            raise ValueError(f"column {self.name!r}: bounds {self.bounds} have low above high")


UNIT_INTERVAL = (0.0, 1.0)  # a probability, a share, a percentile rank


@dataclass(frozen=True)
class TableSpec:
    name: str
    comment: str
    columns: tuple[Column, ...]
    partition_by: tuple[str, ...] = field(default_factory=tuple)
    layer: str = "bronze"  # bronze: as fetched; silver: cleaned/derived; gold: scores, reports

    def arrow_schema(self) -> pa.Schema:
        return pa.schema(
            [pa.field(c.name, c.type, nullable=c.nullable, metadata={"comment": c.comment}) for c in self.columns]
        )

    def path(self, cfg: Settings) -> str:
        return cfg.table_path(self.name)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


def table(name: str, comment: str, columns: list[Column], partition_by: tuple[str, ...] = (), layer: str = "bronze") -> TableSpec:
    """Declare a table (once per name)."""
    spec = TableSpec(name, comment, tuple(columns), tuple(partition_by), layer)
    if name in TABLES and TABLES[name] != spec:
        raise ValueError(f"table {name!r} is declared twice with different definitions")
    TABLES[name] = spec
    return spec
