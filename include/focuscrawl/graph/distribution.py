"""A distribution over a graph's contents: what an estimator returns and what the ground truth is.

Seed 003 (*Fast crawling methods of exploring content distributed over large graphs*): the share of contents per number of copies (omega, target
``copies``) or per label (l_k, target ``label``). Its own module so that the graph access (the
ground truth of a simulated graph) and the estimators share it without importing each other.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from focuscrawl.core.records import RecordError, field_value, json_object

TARGETS = ("copies", "label")
# The share of the site's pages that are about the project's focus: a vertex's own page is one content
# with one copy, labelled by its relevance (focuscrawl.graph.estimators.page_sample).
RELEVANT = "relevant"
ALL_TARGETS = (*TARGETS, RELEVANT)


@dataclass(frozen=True, eq=False)
class Distribution(Mapping):
    """The share of the graph's contents per value of ``target`` (a copy count for ``copies``, a label
    for ``label``), summing to 1: an estimate (empty when the sample holds no content) or the truth.

    A read-only mapping ``{value: share}``, which the evaluation reads like any dict (and which compares
    equal to a dict with the same items). JSON: ``{"target": ..., "shares": {value: share}}``,
    the values as strings (JSON keys), read back as ints for ``copies``.
    """

    target: str
    shares: Mapping[int | str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.target not in ALL_TARGETS:
            raise ValueError(f"target must be one of {ALL_TARGETS} (got {self.target!r})")
        object.__setattr__(self, "shares", dict(self.shares))

    def __getitem__(self, value: int | str) -> float:
        return self.shares[value]

    def __iter__(self) -> Iterator[int | str]:
        return iter(self.shares)

    def __len__(self) -> int:
        return len(self.shares)

    def __repr__(self) -> str:
        return f"Distribution({self.target!r}, {self.shares!r})"

    def to_json(self) -> bytes:
        return json.dumps({"target": self.target, "shares": {str(k): v for k, v in self.shares.items()}}).encode()

    @classmethod
    def from_json(cls, value: bytes | str) -> "Distribution":
        row = json_object(value, cls.__name__)
        target = field_value(cls.__name__, row, "target", str)
        if target not in ALL_TARGETS:
            raise RecordError(cls.__name__, f"expected one of {ALL_TARGETS}, got {target!r}", "target")
        shares = field_value(cls.__name__, row, "shares", dict[str, float])
        try:
            return cls(target, {(int(k) if target == "copies" else k): float(v) for k, v in shares.items()})
        except (TypeError, ValueError) as exc:
            raise RecordError(cls.__name__, f"expected {{value: share}} numbers ({exc})", "shares") from None
