"""The latency benchmark's view of the world's live stream (bench/latency_bench.py ``listed_items``), read
through the population's public ids, not its private stream list."""

from __future__ import annotations

import importlib
import math
from pathlib import Path

from focuscrawl.world import build_world
from focuscrawl.world.population import base36

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_listed_items_yields_every_live_item_once_at_the_end_of_its_bucket(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # the benchmarks import each other as scripts do
    listed_items = importlib.import_module("latency_bench").listed_items
    world = build_world(7, users=2000, base_rate=0.05, paused=True, rate_limit=0, events_per_minute=30.0,
                        warmup_seconds=0.0, data_dir=None, web=False, bucket_seconds=60)
    world.clock.set(world.clock.now() + 600)
    world.now()
    world.clock.resume()  # a running clock maps simulated times to wall times (a paused one to none)
    pop = world.population
    everything = list(listed_items(world, -math.inf, math.inf, 0.0))
    assert len(everything) == pop.stream_size() > 0
    assert len({name for name, _, _ in everything}) == len(everything)
    assert {kind for _, kind, _ in everything} == {"t1", "t3"}
    post = pop.item(pop.posts_all[0])
    shown = world.clock.wall_at(pop.visible_at(post))
    names = {name for name, _, _ in listed_items(world, shown, shown + 1, 0.0)}
    assert f"t3_{base36(post.num)}" in names
    assert f"t3_{base36(post.num)}" not in {name for name, _, _ in listed_items(world, -math.inf, shown, 0.0)}
