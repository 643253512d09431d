"""The sources loop's knobs (seed 001), declared once: the crawl budget and how the schedule is planned.

Seed 001 (*Timely crawling of high-quality ephemeral new content*) splits one crawl budget between recrawling content sources and
fetching the new pages they reveal (introduction, section 2); it fixes no numbers, so these are
this platform's. ``[loops.sources]`` of the project file, the ``source_schedule`` DAG's Params,
``spark_jobs/source_schedule.py``, ``streaming/source_crawler.py`` and ``focuscrawl experiment
ephemeral`` take their defaults from :data:`DEFAULT` (``focuscrawl.core.params``).
"""

from __future__ import annotations

from dataclasses import dataclass

from focuscrawl.core.params import knob


@dataclass(frozen=True)
class EphemeralParams:
    scheduler: str = knob("LAMBDA", "registered scheduler: BFS, FIXED_QUOTA, LAGRANGE, LAMBDA")
    # 90 fetches an hour: fewer than the default world's ~100 new pages an hour, so the budget has
    # to choose between recrawls and new pages, which is the seed's problem (README of ephemeral/).
    budget: float = knob(0.025, "crawl budget, fetches per second (recrawls + new pages)", exclusiveMinimum=0)
    host_min_interval_s: float = knob(60.0, "politeness: seconds between two fetches of one host", exclusiveMinimum=0)
    optimism: float = knob(0.0, "posterior sds added to λ and P (exploration)", minimum=0)
    # What a new page earns its source (focuscrawl.ephemeral.feedback): the seed's clicks, or its relevance
    # discounted by the fetch delay with the freshness half-life (a project on real sites: relevance).
    feedback: str = knob("CLICKS", "registered profit signal: CLICKS, RELEVANCE")
    freshness_half_life_s: float = knob(86400.0, "with RELEVANCE: seconds after publication at which a page's "
                                        "relevance counts half", exclusiveMinimum=0)
    # The crawler's own plan until the first pushed schedule arrives (ephemeral/crawler.py).
    default_interval_s: float = knob(3600.0, "seconds between recrawls of a source before the first pushed "
                                     "schedule", exclusiveMinimum=0)
    min_interval_s: float = knob(60.0, "politeness: least seconds between two recrawls of one source",
                                 exclusiveMinimum=0)
    max_sources: int = knob(200, "candidate sources examined per site", minimum=1)


DEFAULT = EphemeralParams()
SCHEDULE_KNOBS = ("budget", "host_min_interval_s", "optimism", "feedback", "freshness_half_life_s")  # spark_jobs/source_schedule.py
CRAWL_KNOBS = ("budget", "default_interval_s", "min_interval_s", "max_sources")  # streaming/source_crawler.py
