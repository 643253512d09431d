"""The graph loop follows the page focus: the live sampler scores each sampled vertex's page, the rows land
with their relevance and are counted as harvest, and the estimators give the share of relevant pages."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.graph.access import ContentCopies, HttpGraphAccess, InMemoryGraph
from focuscrawl.graph.estimators import estimates_of, page_sample
from focuscrawl.graph.live import PageRelevance, SamplingRounds, graph_sample_row
from focuscrawl.graph.samplers import SAMPLERS, Sample
from focuscrawl.graph.tables import GRAPH_SAMPLE, replicate_estimates, sample_from_frame, summarise_replicates
from focuscrawl.lake.delta_sink import StreamRecord
from focuscrawl.relevance.score import PageScorer
from focuscrawl.relevance.train import store_for, train_page_model
from focuscrawl.stream.metrics import Metrics
from tests.relevance.test_live_relevance import trained  # noqa: F401 - the fixture
from tests.relevance.test_page_focus import HISTORY, OTHER, html

# A ring of 8 vertices with a chord; vertices 0-2 have history pages (the focus), the others not;
# vertex 7's document names no page, so it is never scored.
N = 8
EDGES = [(i, (i + 1) % N) for i in range(N)] + [(0, 4)]
RELEVANT = {0, 1, 2}


def _site_routes() -> dict:
    neighbours = {v: sorted({b for a, b in EDGES if a == v} | {a for a, b in EDGES if b == v}) for v in range(N)}
    routes = {"/robots.txt": (200, {}, b"User-agent: *\nAllow: /\n")}
    for v in range(N):
        doc = {"id": str(v), "neighbors": [str(n) for n in neighbours[v]],
               "content": [{"content_id": f"c{v}", "label": "x", "copies": 1, "special": True}]}
        if v != 7:
            doc["page"] = f"/pages/{v}.html"
            text = (HISTORY if v in RELEVANT else OTHER)[v % 3].format(f"vertex {v}")
            routes[f"/pages/{v}.html"] = (200, {"Content-Type": "text/html"}, html(text))
        routes[f"/graph/vertex/{v}.json"] = (200, {"Content-Type": "application/json"}, json.dumps(doc).encode())
    return routes


def test_the_live_sampler_scores_each_vertex_page_once_lands_it_and_counts_the_harvest(trained):  # noqa: F811
    from helpers import HttpSite

    project, cfg = trained
    train_page_model(project, cfg, log=lambda _: None)
    metrics = Metrics("graph-sampler")
    with HttpSite(_site_routes()) as site:
        base = f"http://127.0.0.1:{site.port}"
        with Fetcher("focuscrawl-test/1 (+mailto:ops@example.org)", guard=AddressGuard([f"127.0.0.1:{site.port}"]),
                     politeness=HostPoliteness(min_delay=0.0)) as fetcher:
            score = PageRelevance(fetcher, PageScorer(store_for(project, cfg).root, "TFIDF-LR", ["en"],
                                                      on_scored=metrics.page_scored("graph")))
            rounds = SamplingRounds("live-RW", "RW", budget=60, every=0, seed=1, sampler_params={"start": "0"})
            record, rows = rounds.sample(lambda b: HttpGraphAccess(base, budget=b, uniform=False, fetcher=fetcher), score)
        pages_fetched = [p for _, p in site.log if p.startswith("/pages/")]
    visited = {r["vertex_id"] for r in rows}
    assert len(visited) >= 6 and record.queries == 60  # page fetches spend no vertex query
    assert sorted(pages_fetched) == sorted(f"/pages/{v}.html" for v in visited if v != "7")  # each page once a round
    for r in rows:
        if r["vertex_id"] == "7":
            assert (r["relevance"], r["relevance_model"], r["relevant"]) == (None, None, None)
        else:
            assert r["relevance_model"] == "TFIDF-LR/v1" and r["relevant"] == (int(r["vertex_id"]) in RELEVANT)
    scored = visited - {"7"}
    assert record.pages_scored == len(scored) and record.relevant == len(scored & {"0", "1", "2"})
    snap = metrics.snapshot()
    assert snap["pages_scored_total"] == len(scored) and snap["relevant_pages_total"] == record.relevant

    # landed as graph_sample rows, read back as a crawl whose page share the estimators give
    landed = [graph_sample_row(StreamRecord("t", 0, i, json.dumps(r).encode(), b"k", 0)) for i, r in enumerate(rows)]
    assert all(set(row) == set(GRAPH_SAMPLE.column_names) for row in landed)
    sample = sample_from_frame(pd.DataFrame(landed))
    assert np.isnan(sample.relevant[sample.vertices == "7"]).all()
    found = {name: dist for name, target, dist in estimates_of(sample, ["NAIVE", "SCE", "WCE"], ["relevant"])}
    assert set(found) == {"NAIVE", "SCE", "WCE"}
    assert found["NAIVE"]["relevant"] == pytest.approx(len(scored & {"0", "1", "2"}) / len(scored))


def _star(leaves: int) -> InMemoryGraph:
    edges = np.array([[0, i] for i in range(1, leaves + 1)])
    return InMemoryGraph.build(leaves + 1, edges, copy_vertex=np.arange(leaves + 1), copy_content=np.arange(leaves + 1),
                               content_label=np.zeros(leaves + 1, dtype=int))


def _with_relevance(sample: Sample, relevant_vertices: set) -> Sample:
    flags = np.array([1.0 if int(v) in relevant_vertices else 0.0 for v in sample.vertices])
    return Sample(sample.vertices, sample.weights, sample.copy_ptr, sample.copies, sample.uniform, sample.num_vertices,
                  sample.origin, flags)


def test_the_weighted_estimators_undo_the_walks_bias_towards_the_hub_and_naive_does_not():
    # a star: the random walk is at the hub every other step; only the hub's page is relevant (1 of 21 pages)
    graph = _star(20)
    rng = np.random.default_rng(7)
    walk = _with_relevance(SAMPLERS.create("RW", start=0).sample(graph.access(4000, rng), rng), {0})
    raw_share = float(walk.relevant.mean())
    assert raw_share == pytest.approx(0.5, abs=0.02)  # what a crawler counting its draws would report
    found = {name: dist for name, _, dist in estimates_of(walk, ["NAIVE", "SCE", "WCE"], ["relevant"])}
    assert found["SCE"]["relevant"] == pytest.approx(1 / 21, abs=0.01)
    assert found["WCE"]["relevant"] == pytest.approx(found["SCE"]["relevant"])  # one copy each: both Hansen-Hurwitz
    assert found["NAIVE"]["relevant"] == pytest.approx(1 / 21)  # every page seen once (a long walk sees all)
    # and bootstrap intervals hold the estimate
    reps = replicate_estimates(walk, "c", list(range(-1, 50)), ["SCE"], ["relevant"], block_length=20, seed=0)
    summary = summarise_replicates(reps, 0.95).set_index("value")
    assert summary.loc["relevant", "ci_low"] <= summary.loc["relevant", "estimate"] <= summary.loc["relevant", "ci_high"]
    assert summary.loc["relevant", "ci_high"] < 0.2


def test_no_scored_page_no_relevant_estimate_and_unknown_targets_are_named():
    sample = Sample(np.array(["a", "b"]), np.ones(2), np.array([0, 0, 0]), ContentCopies.from_rows([]), uniform=True)
    assert page_sample(sample) is None
    assert list(estimates_of(sample, ["SCE"], ["relevant"])) == []
    unscored = Sample(sample.vertices, sample.weights, sample.copy_ptr, sample.copies, True, None, None,
                      np.array([np.nan, np.nan]))
    assert page_sample(unscored) is None
    with pytest.raises(ValueError, match="copies', 'label', 'relevant"):
        list(estimates_of(sample, ["SCE"], ["topic"]))
