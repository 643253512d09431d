"""A generated world served in the test process on the configured ports, with the switches a test needs."""

from __future__ import annotations

import pytest


@pytest.fixture
def serve_world(cfg):
    """``serve_world(rate_limit=..., faults=...)`` -> the world's crawl URL; stopped after the test."""
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    servers = []

    def serve(rate_limit: int = 0, rate_window: float = 60.0, faults=None) -> str:
        world = build_world(11, data_dir=None, cache_dir=cfg.var_dir, web=False, rate_limit=rate_limit,
                            rate_window=rate_window, faults=faults)
        servers.append(WorldServer(world, cfg.bind_host, cfg.world_port, cfg.world_eval_port).start())
        return cfg.world_url

    yield serve
    for server in servers:
        server.stop()
