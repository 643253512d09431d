"""The revisit loop's knobs (seed 002), declared once: embedding, related pages, look back and the models.

Seed 002 (*Look back, look around*). ``[loops.revisits] related``, the ``outlinks_features`` and
``outlinks_train`` DAGs' Params, the ``spark_jobs/outlinks_*.py`` flags and the domain functions
(``focuscrawl.outlinks``) take their defaults from :data:`DEFAULT` (``focuscrawl.core.params``).
"""

from __future__ import annotations

from dataclasses import dataclass

from focuscrawl.outlinks.schema import REVISIT_TARGETS, SCOPES
from focuscrawl.core.params import knob


@dataclass(frozen=True)
class OutlinksParams:
    # Section 7, "Embedding": TF-IDF reduced by LSA; the dimensions and the fitting sample are ours.
    dimensions: int = knob(100, "LSA dimensions", minimum=2)
    sample_size: int = knob(50_000, "pages the TF-IDF/SVD is fitted on", minimum=1)
    # Section 7, "KNN": "We use the KNN algorithm to find k=30 most related pages of each page".
    k: int = knob(30, "related pages per page", minimum=1)
    # its allowed names are the registry's (focuscrawl.outlinks.related.RELATED), which imports these
    # defaults: the DAG adds them to the Param (dags/outlinks.py), the job's flag checks them by lookup
    method: str = knob("EXACT", "related-pages search")
    history_size: int = knob(4, "look-back intervals", minimum=1)
    # What counts as a page's new outlink (focuscrawl.outlinks.targets): every one (the seed's NNL), or
    # only those about the project's page focus; features and models are the same either way.
    target: str = knob(REVISIT_TARGETS[0], "new_outlinks, or new_relevant_outlinks (with the page focus's "
                       "model flags)", enum=list(REVISIT_TARGETS))
    # The seed's results (Figures 14, 15): ExtraT on the LBLA features alone predicts best, and
    # NNL-NGB is remarkably strong on internal outlinks; the champion is the first of the two.
    models: tuple[str, ...] = knob(("NNL-ET_LBLA", "NNL-NGB"), "comma-separated model specs to train")
    # Seed 002 trained on every row, for 1.5 hours on 16 cores. At its 384k pages x 10 weeks the
    # training periods hold 1.5M rows: fully grown ExtraTrees on all of them would take about 6 GB a
    # model and NGBoost about 30 minutes a scope on one core (extrapolated from 80k rows), so each
    # model fits on a random sample; bench/train_bench.py measures what it costs in Spearman and
    # P@k%. Below 50k pages x 4 training periods it is every row.
    train_sample: int = knob(200_000, "training rows a model is fitted on, drawn at random from the training "
                             "periods (0: every row)", minimum=0)
    score_model: str = knob("NNL-ET_LBLA", "champion that sets revisit priorities")
    score_scope: str = knob("int", "internal or external new outlinks", enum=list(SCOPES))


DEFAULT = OutlinksParams()
# Seed 002, Section 5.1: its crawls are weekly (the targets are week 9's new outlinks), so a known page
# is revisited once a week.
WEEK = 7 * 86400.0
# The knobs each job takes.
EMBED_KNOBS = ("dimensions", "sample_size")  # spark_jobs/outlinks_embed.py
RELATED_KNOBS = ("k", "method")              # spark_jobs/outlinks_related.py
FEATURE_KNOBS = ("history_size", "target")   # spark_jobs/outlinks_features.py
TRAIN_KNOBS = ("models", "history_size", "train_sample")  # spark_jobs/outlinks_train.py
