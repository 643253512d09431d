"""The graph loop's knobs (seed 003), declared once: the sampler's round, the estimators and their intervals.

Seed 003 (*Fast crawling methods of exploring content distributed over large graphs*) fixes which estimators there are, not numbers: the bootstrap
(replicates, block length, level) is this platform's way of putting error bars on them, and the
budget a choice per site. ``[loops.graph]`` of the project file, the ``graph_estimation`` DAG's
Params, ``streaming/graph_sampler.py`` and ``spark_jobs/graph_estimation.py`` take their defaults
from :data:`DEFAULT` (``focuscrawl.core.params``).
"""

from __future__ import annotations

from dataclasses import dataclass

from focuscrawl.graph.distribution import ALL_TARGETS
from focuscrawl.core.params import knob


@dataclass(frozen=True)
class GraphEstimationParams:
    sampler: str = knob("RW", "registered sampler: UNI, RW, MHRW, FS")
    query_budget: int = knob(1000, "vertex queries per sample round", minimum=1)
    # Seed 003, *Fast crawling methods of exploring content distributed over large graphs* (abstract): naive sampling is heavily biased, MLE needs most vertices sampled, and its
    # SCE and WCE are the efficient estimators; all four are estimated, so the bias stays visible.
    estimators: tuple[str, ...] = knob(("NAIVE", "MLE", "SCE", "WCE"), "comma-separated estimators; MLE only on UNI crawls")
    targets: tuple[str, ...] = knob(ALL_TARGETS, "copies (the seed's omega), label and/or relevant (the share of "
                                    "the site's pages about the page focus, when the sampler scored them)")
    replicates: int = knob(200, "bootstrap replicates per crawl", minimum=1)
    # Walk draws are correlated, so replicates resample blocks of consecutive draws (1: the plain bootstrap).
    block_length: int = knob(20, "moving-block length in draws", minimum=1)
    level: float = knob(0.95, "confidence level of the intervals", exclusiveMinimum=0, exclusiveMaximum=1)
    seed: int = knob(0, "seed of the bootstrap draws (replicate r draws with (seed, r))")
    every_s: float = knob(300.0, "wall seconds from one sample round's end to the next's start", minimum=0)


DEFAULT = GraphEstimationParams()
SAMPLING = ("sampler", "query_budget")  # [loops.graph]'s sampling design
SAMPLER_KNOBS = (*SAMPLING, "every_s")  # what streaming/graph_sampler.py takes
ESTIMATION = ("estimators", "targets", "replicates", "block_length", "level", "seed")  # spark_jobs/graph_estimation.py
