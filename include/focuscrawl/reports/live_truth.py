"""The evaluation side of a live run: ground truth joined to what the live loops wrote, world only.

The live path reads the crawl surface only; what only the world knows (a user's
hidden label, a page's true profit) is joined in here, after the fact, by the evaluation side, and
only when the project's ``target`` is ``"world"``. A project on real sites has no ground truth, so
:func:`for_project` gives None and a report shows the live figures alone.

The join for the FUE loop (seed 000, section V): the reference classifier's verdicts in
``fue_extractions`` against the users' hidden labels, so a report can say how many of the users the
live run judged relevant really are, per method, next to the harvest it measured itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import requests


@dataclass(frozen=True)
class WorldTruth:
    """The world's evaluation interface (``eval_url``), read by the evaluation side only."""

    eval_url: str
    timeout: float = 30.0
    batch: int = 200

    def labels(self, users: Iterable[str]) -> dict[str, int | None]:
        """Hidden label (1 target, 0 not) of each user; None for a name the world does not have."""
        names = sorted(set(users))
        found: dict[str, int | None] = {}
        for i in range(0, len(names), self.batch):
            r = requests.get(f"{self.eval_url.rstrip('/')}/truth/users", params={"names": ",".join(names[i:i + self.batch])},
                             timeout=self.timeout)
            r.raise_for_status()
            found.update(r.json()["labels"])
        return found


def for_project(project, cfg) -> WorldTruth | None:
    """The ground truth a report may join for ``project``: the world's when its target is the world, else None."""
    if getattr(project, "target", None) != "world":
        return None
    return WorldTruth(cfg.world_eval_url)


def fue_verdicts_against_truth(rows: Iterable[dict], truth: WorldTruth) -> dict[str, dict]:
    """Per method: users extracted, judged relevant (the live harvest), truly relevant (hidden labels),
    and the judged-relevant users that truly are (the verdicts' precision)."""
    rows = list(rows)
    labels = truth.labels(r["user"] for r in rows)
    out: dict[str, dict] = {}
    for r in rows:
        m = out.setdefault(r["method"], {"extracted": 0, "judged_relevant": 0, "truly_relevant": 0,
                                         "judged_and_true": 0, "unknown": 0})
        label = labels.get(r["user"])
        m["extracted"] += 1
        m["judged_relevant"] += bool(r["relevant"])
        if label is None:
            m["unknown"] += 1
            continue
        m["truly_relevant"] += label
        m["judged_and_true"] += label and bool(r["relevant"])
    for m in out.values():
        m["verdict_precision"] = m["judged_and_true"] / m["judged_relevant"] if m["judged_relevant"] else None
        m["true_harvest"] = m["truly_relevant"] / m["extracted"] if m["extracted"] else None
    return out
