"""FUE verdicts are timed by the records: the history's site time (the fetch's Date, else its newest item)."""

from __future__ import annotations

import pytest

from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.fue.pipeline import History, RedditClient, UserExtractor, VerdictTimes


def test_verdict_times_count_from_the_run_start():
    times = VerdictTimes()
    assert times(History("a", (), 1, 0.1, fetched_at=1_700_000_100.0)) == (0.0, 1_700_000_100.0)
    assert times(History("b", (), 1, 0.1, fetched_at=1_700_000_160.0)) == (60.0, 1_700_000_160.0)
    assert VerdictTimes(1_700_000_000.0)(History("c", (), 1, 0.1, fetched_at=1_700_000_030.0))[0] == 30.0
    with pytest.raises(ValueError, match="no fetched_at.*extract the user again"):
        times(History("old", (), 1, 0.1))
    h = History("x", ("t",), 2, 0.5, "HCP", ("sad",), 1_700_000_001.0)
    assert History.from_json(h.to_json()) == h


def test_an_extracted_history_carries_the_worlds_time_from_the_date_header():
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    world = build_world(4, data_dir=None, users=300, paused=True, rate_limit=0, events_per_minute=30.0)
    world.clock.advance(5 * 3600)
    with WorldServer(world) as server:
        netloc = server.url.removeprefix("http://")
        with Fetcher("focuscrawl-test/1 (+ops@example.org)", guard=AddressGuard([netloc]),
                     politeness=HostPoliteness(min_delay=0)) as fetcher:
            client = RedditClient(fetcher, server.url)
            records, _ = client.listing("/r/all/new.json", limit=5)
            history = UserExtractor(client, cap=50).extract(records[0]["author"])
    assert history.fetched_at == int(world.clock.now())
    assert history.fetched_at > max(float(r["created_utc"]) for r in records) - 1  # the site's now, not a post's
