"""The live graph sampler's domain half (focuscrawl.graph.live) and the fetch-layer graph access."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from focuscrawl.lake.delta_sink import StreamRecord
from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.graph.access import HttpGraphAccess, InMemoryGraph
from focuscrawl.graph.live import RoundRecord, SamplingRounds, graph_sample_row
from focuscrawl.graph.tables import GRAPH_SAMPLE, sample_from_frame

EDGES = np.array([[0, 1], [1, 2], [0, 2], [2, 3], [3, 4]])


@pytest.fixture(scope="module")
def graph() -> InMemoryGraph:
    return InMemoryGraph.build(5, EDGES, copy_vertex=np.array([2, 4, 2]), copy_content=np.array([0, 0, 1]),
                               content_label=np.array(["a", "b"]))


def test_a_round_is_one_crawl_of_the_budget_whose_rows_round_trip(graph):
    rounds = SamplingRounds("live-RW", "rw", budget=40, every=60, seed=3, sampler_params={"start": 0})
    record, rows = rounds.sample(lambda b: graph.access(b))
    assert (record.round, record.crawl_id, record.sampler, record.queries, record.draws) == (0, "live-RW-r00000", "RW", 40, 40)
    assert record.rows == len(rows) and {r["crawl_id"] for r in rows} == {"live-RW-r00000"}
    landed = [graph_sample_row(StreamRecord("t", 0, i, json.dumps(r).encode(), b"k", 0))
              for i, r in enumerate(rows)]
    assert all(set(row) == set(GRAPH_SAMPLE.column_names) for row in landed)
    sample = sample_from_frame(pd.DataFrame(landed))
    assert len(sample) == 40 and not sample.uniform
    # the same round re-run (after a crash) walks the same way on the same answers
    again, rows_again = SamplingRounds("live-RW", "RW", 40, 60, seed=3, sampler_params={"start": 0}).sample(
        lambda b: graph.access(b))
    def walk(rs):
        return [{k: v for k, v in r.items() if k != "sampled_at"} for r in rs]

    assert walk(rows_again) == walk(rows)  # only the round's start time differs
    assert all(isinstance(r["sampled_at"], int) for r in rows)


def test_rounds_resume_after_the_last_committed_and_wait_their_interval(graph):
    rounds = SamplingRounds("x", "UNI", budget=5, every=300, rounds=3)
    assert (rounds.next_round, rounds.due_in()) == (0, 0.0)
    done = RoundRecord(1, "x-r00001", "UNI", 7, 5, 5, finished_at=1000.0)
    rounds.restore(done)
    assert rounds.next_round == 2 and rounds.due_in(now=1100.0) == 200.0 and rounds.due_in(now=2000.0) == 0.0
    record, _ = rounds.sample(lambda b: graph.access(b, np.random.default_rng(0)))
    assert record.crawl_id == "x-r00002" and not rounds.finished()
    rounds.committed(record)
    assert rounds.finished() and RoundRecord.from_json(record.to_json()) == record


def test_bad_settings_name_the_fix():
    with pytest.raises(KeyError, match="known graph samplers: FS, MHRW, RW, UNI"):
        SamplingRounds("x", "SNOWBALL", 10, 60)
    with pytest.raises(ValueError, match="at least 1 vertex query"):
        SamplingRounds("x", "RW", 0, 60)
    with pytest.raises(ValueError, match="not written by graph/live.py"):
        graph_sample_row(StreamRecord("t", 0, 0, b'{"crawl_id": "c"}', b"k", 0))


def test_http_access_through_the_fetch_layer_reads_the_worlds_graph():
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    world = build_world(5, data_dir=None, users=200, paused=True, rate_limit=0, events_per_minute=0.1, web=True)
    with WorldServer(world) as server:
        netloc = server.url.removeprefix("http://")
        with Fetcher("focuscrawl-test/1 (+ops@example.org)", guard=AddressGuard([netloc]),
                     politeness=HostPoliteness(min_delay=0)) as fetcher:
            access = HttpGraphAccess(server.url, budget=3, fetcher=fetcher)
            first = access.random_vertex()
            nxt = access.vertex(first.neighbors[0])
            assert first.id in nxt.neighbors.tolist() and access.queries == 2
            paths = [e["path"] for e in world.access_log.since(0)["entries"]]
            assert paths[0] == "/robots.txt" and paths[1] == "/graph/random.json"  # robots first: the fetch layer
            with pytest.raises(Exception, match="404"):
                access.vertex("999999999")
