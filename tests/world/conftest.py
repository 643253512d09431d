"""A small seeded world served on ephemeral ports, clock paused, for the world's HTTP tests."""

from __future__ import annotations

import pytest

from focuscrawl.world import build_world
from focuscrawl.world.server import WorldServer

START = 1_700_000_000.0


def small_world(seed: int = 7, **kw):
    args = dict(users=5000, base_rate=0.05, start_epoch=START, paused=True, rate_limit=0,
                events_per_minute=20.0, warmup_seconds=1800.0, data_dir=None, web=False)
    args.update(kw)
    return build_world(seed, **args)


@pytest.fixture(scope="module")
def served():
    with WorldServer(small_world()) as server:
        yield server
