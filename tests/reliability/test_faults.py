"""Issue 8, points 4-5: faults at the site, SIGKILLs of every process type and broker restarts, and at
the end the posts in Delta are exactly the posts the world served to the crawler, each once, the
malformed bodies are dead letters, and the crawler kept its per-host delay (the world's access log).

Short form (CI): each fault and kill once, about a minute of chaos; ``make soak`` (``--soak`` or
FOCUSCRAWL_FAULT_SUITE=1) keeps going for 4 minutes.

The dead letters are checked against a count the test makes sure of: malformed bodies met during the
chaos come at a 5 % rate over a number of requests that falls with the machine's load (none at all in
some loaded CI runs, where the check then waited for a row nobody owed), so after the clean pass the
world serves only malformed listings until the crawler got ``MALFORMED_AT_END`` of them.

No fixed sleeps (issue 19): each event comes after a random number of the crawler's requests, each
outage lasts until its effect is seen (the killed crawler's records landed, the crawler met the dead
host or the redirect loop, a backlog built up for a killed consumer), and the counts are read once
both tables' Delta positions reached their topics' end offsets, after which nothing more can land.
The broker it kills is the test's own (``own_kafka_broker``), not the session's.
"""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest

from harness import malformed_bodies, served_to, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

FAULTS = dict(error_rate=0.1, slow_rate=0.05, slow_seconds=1.0, truncate_rate=0.05, malformed_rate=0.05)
EVENTS = ("crawler", "consumer", "broker", "dead_host", "redirect_loop")
MALFORMED_AT_END = 2


def test_faults_and_kills_lose_and_duplicate_nothing_and_stay_polite(live_world, restartable_pipeline, cfg, soak):
    pipeline = restartable_pipeline
    broker = pipeline.broker  # the test's own: its restarts disturb no other test
    rng = random.Random(808)
    client = f"127.0.0.1|{cfg.user_agent}"  # how the world tells the crawler apart (no X-Client-Id)
    crawler = pipeline.crawler().start()
    posts = pipeline.consumer("posts").start()
    dead = pipeline.consumer("dead", "dead_letter").start()
    live_world.faults(**FAULTS)
    wait_for(lambda: pipeline.names(), 150, "the first rows", pipeline.procs)

    def crawled(n: int, what: str) -> None:
        """Wait until the crawler made ``n`` more requests to the world (its crawl goes on)."""
        since = live_world.requests_of(client)
        wait_for(lambda: live_world.requests_of(client) >= since + n, 120, f"{n} more requests: {what}",
                 pipeline.procs)

    done: Counter = Counter()
    end = time.monotonic() + (240 if soak else 0)  # short form: each event once
    order: list[str] = []
    while time.monotonic() < end or len(done) < len(EVENTS):
        if not order:
            order = rng.sample(EVENTS, len(EVENTS))
        event = order.pop()
        # A random point in the crawl, counted in the crawler's requests (not seconds: under load a
        # fixed sleep can end before the last event's processes did anything).
        crawled(rng.randint(6, 24) if soak else rng.randint(3, 12), f"before the {event} event")
        if event == "crawler":
            crawler.kill()
            # Down until the posts landing took in every record the killed crawler produced.
            wait_for(lambda: pipeline.landed("reddit_posts"), 120, "the posts topic landed", pipeline.procs)
            crawler.start()
        elif event == "consumer":
            victim = rng.choice([posts, dead])
            victim.kill()
            crawled(rng.randint(1, 6), f"while consumer {victim.name} is down")  # a backlog waits for it
            victim.start()
        elif event == "broker":
            broker.kill()
            wait_for(lambda: not broker.healthy(), 30, "the broker to die")  # else start() sees it up
            # Down for as long as the JVM takes to come back (seconds), with everyone retrying.
            broker.start(timeout=180)  # an unclean restart took over 60 s at load 40
        elif event == "dead_host":
            failed = crawler.tail(10**7).count("next try in")
            live_world.down()
            # Down until the crawler met the dead host (a failed fetch in its log).
            wait_for(lambda: crawler.tail(10**7).count("next try in") > failed, 120,
                     "the crawler meeting the dead host", pipeline.procs)
            live_world.up()
        else:
            met = live_world.requests_of(client, "redirect_loop")
            live_world.faults(redirect_loop=["/r/all/new.json"])
            wait_for(lambda: live_world.requests_of(client, "redirect_loop") > met, 120,
                     "the crawler meeting the redirect loop", pipeline.procs)
            live_world.faults(redirect_loop=[])
        done[event] += 1
        assert all(p.alive() for p in pipeline.procs), [p.tail() for p in pipeline.procs if not p.alive()]

    # Calm: no faults, the clock stops, so one clean pass re-serves every post still listed.
    live_world.faults(error_rate=0, slow_rate=0, truncate_rate=0, malformed_rate=0, redirect_loop=[])
    live_world.pause()
    mark = len(live_world.access_log())
    listed = live_world.listing_names()
    wait_for(lambda: served_to(live_world.access_log()[mark:], client) >= listed, 120, "a clean pass", pipeline.procs)
    mark = len(live_world.access_log())
    live_world.faults(malformed_rate=1.0)
    wait_for(lambda: malformed_bodies(live_world.access_log()[mark:], client) >= MALFORMED_AT_END, 60,
             "malformed bodies at the end", pipeline.procs)
    live_world.faults(malformed_rate=0)
    # The crawler stops: the topics hold all they will hold, and the world's log all it served.
    crawler_exit = crawler.stop()
    log = live_world.access_log()
    served = served_to(log, client)
    # Both landings through their topics' end offsets: every record is in Delta, skipped as a copy or
    # dead-lettered, so the counts below are final (a duplicate would be there already).
    wait_for(lambda: pipeline.landed("reddit_posts", "dead_letter"), 120,
             "both tables' Delta positions at their topics' end offsets", pipeline.procs)
    names = pipeline.names()
    mine = [e for e in log if e["client"] == client]
    malformed = malformed_bodies(log, client)
    owed = malformed - crawler.kills  # a SIGKILLed crawler may take one fetched page's dead letter with it
    letters = pipeline.table("dead_letter").to_pylist() if pipeline.rows("dead_letter") else []
    arrivals = sorted(e["at"] for e in mine)
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    assert crawler_exit == 0, crawler.tail()
    for p in pipeline.procs:
        assert p.stop() == 0, p.tail()

    print(f"\nsoak summary: chaos {sum(done.values())} events {dict(done)}; requests {len(mine)}, "
          f"faults met {dict(Counter(e['fault'] for e in mine if e['fault']))}; posts served {len(served)}, "
          f"rows {sum(names.values())}, distinct {len(names)}; dead letters {len(letters)} "
          f"(malformed bodies served {malformed}); min request gap {min(gaps):.3f}s (delay {pipeline.politeness}s); "
          f"log entries per client {dict(Counter(e['client'] for e in log))}")
    assert set(done) == set(EVENTS)
    assert max(names.values()) == 1  # nothing doubled
    assert set(names) == served  # nothing lost, nothing invented
    assert len(served) >= len(listed) > 200  # at least the whole listing, served at the end
    assert owed <= len(letters) <= malformed and malformed >= MALFORMED_AT_END
    assert {r["parser"] for r in letters} == {"listing"}
    assert all(r["reason"].startswith("body is not valid JSON") for r in letters)
    assert min(gaps) >= pipeline.politeness - 0.02  # per-host politeness, measured at the host
