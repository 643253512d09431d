"""The world: a local, seeded social site and web in real formats, with ground truth off the crawl path.

``build_world`` assembles one from settings-like plain arguments; ``WorldServer`` serves it;
``python -m focuscrawl.world serve`` does both from the command line (see docs/world.md).
"""

from __future__ import annotations

from pathlib import Path

from focuscrawl.core.corpora import load_corpus
from focuscrawl.project.world import MessKnobs
from focuscrawl.world.clock import SimClock
from focuscrawl.world.faults import Faults
from focuscrawl.world.mess import Mess
from focuscrawl.world.population import Population, PopulationConfig
from focuscrawl.world.ratelimit import REDDIT_WINDOW, RateLimiter
from focuscrawl.world.world import World


def build_world(seed: int = 0, *, speedup: float = 60.0, data_dir: Path | None = None, cache_dir: Path = Path("var"),
                users: int = 100_000, base_rate: float = 0.02, start_epoch: float = 1_700_000_000.0,
                paused: bool = False, rate_limit: int = 6000, rate_window: float = REDDIT_WINDOW,
                faults: Faults | None = None, web: bool = True, mess: MessKnobs | None = None, **population) -> World:
    """A world from plain arguments; extra keyword arguments go to :class:`PopulationConfig`; ``mess``: how
    messy its web is (:class:`focuscrawl.world.mess.Mess`, off by default)."""
    corpus = load_corpus(seed, data_dir, cache_dir)
    config = PopulationConfig(seed=seed, users=users, base_rate=base_rate, start_epoch=start_epoch, **population)
    site = None
    if web:
        from focuscrawl.world.web import build_web

        site = build_web(seed, start_epoch, data_dir, cache_dir)
        site.mess = Mess.of(mess)
    return World(Population(config, corpus), SimClock(start_epoch, speedup, paused=paused),
                 RateLimiter(rate_limit, rate_window), faults, site)


__all__ = ["build_world", "World", "SimClock", "Faults", "Mess", "Population", "PopulationConfig"]
