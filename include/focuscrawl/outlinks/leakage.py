"""The held-out period stays out of training at run time (seed 002, Section 7: learn from past weeks, rank
pages for the held-out one; docs/loops/outlinks.md).

``training.held_out_split`` trains on the periods before the last labelled one and evaluates on that one.
The look-around features of every row come from the page vectors (``page_embeddings``), so a vector of the
held-out period (or later) would carry its texts into the training rows and into model selection.
"""

from __future__ import annotations

from typing import Iterable


class HeldOutLeak(ValueError):
    """Page vectors as of the held-out period or later reached the features a model would train on."""


def check_vectors_before(as_of_periods: Iterable[int], eval_period: int) -> None:
    """Raise :class:`HeldOutLeak` when any page vector is as of ``eval_period`` or later."""
    periods = [int(p) for p in as_of_periods]
    late = sorted({p for p in periods if p >= eval_period})
    if late:
        raise HeldOutLeak(
            f"{sum(p >= eval_period for p in periods)} of {len(periods)} page vectors (page_embeddings) are as of "
            f"period {', '.join(map(str, late))}, the held-out period {eval_period} or later: their texts would "
            "reach training and model selection. Rebuild them with spark_jobs/outlinks_embed.py (it embeds texts "
            "strictly before the held-out period), then outlinks_related and outlinks_features, and train again")


__all__ = ["HeldOutLeak", "check_vectors_before"]
