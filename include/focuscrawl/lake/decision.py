"""What chose a fetch: the decision lineage every landed fetch carries (docs/querying.md#why-was-this-fetched).

A crawler fetches a page, recrawls a source or extracts a user because a policy put it first. The row it
lands says which: the loop, the policy's registered name (``chosen_by_method``), and, when a pushed ranking
decided, the model that made the push (``chosen_by_model``, ``chosen_by_model_version``) with the score and
rank that push gave the item (``chosen_score``, ``chosen_rank``: 1 = the push's best). A fetch no push
decided (a seed, a page before the first push, a source on the default interval) has a null model and
names the baseline order in ``chosen_by_method``.

Every push names its model: :func:`focuscrawl.topics.priority.publish` sends ``model``, ``model_version``
and ``rank`` beside each ``score``; :meth:`Decision.of_push` reads them back from the row a follower applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pyarrow as pa

from focuscrawl.lake.tables import Column

DECISION_COLUMNS = (
    Column("chosen_by_loop", pa.string(), "loop whose policy chose this fetch: fue, sources, revisits"),
    Column("chosen_by_method", pa.string(), "registered policy that chose it (a ranking method, scheduler or model; "
                                            "a baseline order such as discovery_order when no push decided)"),
    Column("chosen_by_model", pa.string(), "model whose pushed ranking chose it (null: no push decided)"),
    Column("chosen_by_model_version", pa.int64(), "version of that model, as its push named it"),
    Column("chosen_score", pa.float64(), "the score that push gave the item, applied at decision time"),
    Column("chosen_rank", pa.int64(), "the item's rank in that push, 1 = its highest score"),
)
DECISION_COLUMN_NAMES = tuple(c.name for c in DECISION_COLUMNS)


@dataclass(frozen=True)
class Decision:
    """What chose one fetch; :meth:`columns` is its part of the landed row."""

    loop: str
    method: str
    model: str | None = None
    model_version: int | None = None
    score: float | None = None
    rank: int | None = None

    @classmethod
    def of_push(cls, loop: str, method: str, row: Mapping[str, Any] | None) -> "Decision":
        """The decision of a pushed row (``score``, ``model``, ``model_version``, ``rank``) under ``method``."""
        row = row or {}

        def number(key: str, kind):
            value = row.get(key)
            return None if value is None or isinstance(value, bool) else kind(value)

        model = row.get("model")
        return cls(loop, method, None if model is None else str(model), number("model_version", int),
                   number("score", float), number("rank", int))

    def columns(self) -> dict[str, Any]:
        return dict(zip(DECISION_COLUMN_NAMES, (self.loop, self.method, self.model, self.model_version,
                                                self.score, self.rank)))
