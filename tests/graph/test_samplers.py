"""Samplers: budget accounting, sampling weights, burn-in/thinning, stationary distributions, HTTP contract."""

from __future__ import annotations

import json

import numpy as np
import pytest

from focuscrawl.graph.access import (BudgetedAccess, BudgetExhausted, ContentCopies, HttpGraphAccess, InMemoryGraph,
                                     VertexRecord)
from focuscrawl.graph.samplers import SAMPLERS, Sample
from helpers import HttpSite

# A lollipop: triangle 0-1-2, tail 2-3-4 (degrees 2, 2, 3, 2, 1); vertex 2 holds two copies.
EDGES = np.array([[0, 1], [1, 2], [0, 2], [2, 3], [3, 4]])
DEGREES = np.array([2, 2, 3, 2, 1])


@pytest.fixture(scope="module")
def lollipop() -> InMemoryGraph:
    return InMemoryGraph.build(
        5, EDGES, copy_vertex=np.array([2, 4, 2]), copy_content=np.array([0, 0, 1]), content_label=np.array(["a", "b"])
    )


def test_graph_build_counts_copies_and_marks_first_copy_special(lollipop):
    assert lollipop.degrees.tolist() == DEGREES.tolist()
    assert lollipop.content_copies.tolist() == [2, 1]
    rec = lollipop.record(2)
    assert sorted(zip(rec.content.content_id.tolist(), rec.content.special.tolist())) == [(0, True), (1, True)]
    assert lollipop.record(4).content.special.tolist() == [False]
    assert lollipop.truth("copies") == {1: 0.5, 2: 0.5}


def test_build_keeps_largest_component_only():
    g = InMemoryGraph.build(5, np.array([[0, 1], [1, 2], [3, 4]]), np.array([0, 3]), np.array([0, 1]), np.array(["x", "y"]))
    assert g.num_vertices == 3
    assert g.content_copies.tolist() == [1, 0]
    assert g.truth("label") == {"x": 1.0}


@pytest.mark.parametrize("name", SAMPLERS.names())
def test_every_sampler_spends_exactly_its_budget(lollipop, name):
    rng = np.random.default_rng(0)
    access = lollipop.access(budget=50, rng=rng)
    sample = SAMPLERS.create(name).sample(access, rng)
    assert access.queries == 50
    with pytest.raises(BudgetExhausted):
        access.vertex(0)
    assert len(sample) >= 40  # FS spends its walkers' starts, MHRW none of its rejections
    assert set(sample.vertices.tolist()) <= set(range(5))


@pytest.mark.parametrize("name, expected", [("UNI", 1.0), ("MHRW", 1.0), ("RW", None), ("FS", None)])
def test_weights_are_stationary_probabilities_up_to_a_constant(lollipop, name, expected):
    rng = np.random.default_rng(1)
    sample = SAMPLERS.create(name).sample(lollipop.access(budget=200, rng=rng), rng)
    want = np.full(len(sample), expected) if expected else DEGREES[sample.vertices.astype(int)]
    assert np.array_equal(sample.weights, want)


@pytest.mark.parametrize("name, stationary", [("RW", DEGREES / DEGREES.sum()), ("MHRW", np.full(5, 0.2)), ("FS", DEGREES / DEGREES.sum())])
def test_long_walks_visit_vertices_at_their_stationary_rate(lollipop, name, stationary):
    rng = np.random.default_rng(2)
    sample = SAMPLERS.create(name, burn_in=100).sample(lollipop.access(budget=8_000, rng=rng), rng)
    freq = np.bincount(sample.vertices.astype(int), minlength=5) / len(sample)
    assert np.abs(freq - stationary).max() < 0.03


def test_burn_in_and_thinning_drop_draws(lollipop):
    rng = np.random.default_rng(3)
    full = SAMPLERS.create("RW", start=4).sample(lollipop.access(budget=101, rng=np.random.default_rng(3)), rng)
    thinned = SAMPLERS.create("RW", start=4, burn_in=1, thinning=10).sample(
        lollipop.access(budget=101, rng=np.random.default_rng(3)), np.random.default_rng(3)
    )
    assert full.vertices[0] == 4 and len(full) == 101
    assert thinned.vertices.tolist() == full.vertices[1::10].tolist()


def test_walk_without_uniform_sampling_needs_a_start(lollipop):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="start vertex"):
        SAMPLERS.create("RW").sample(lollipop.access(budget=5, rng=rng, uniform=False), rng)
    sample = SAMPLERS.create("MHRW", start=0).sample(lollipop.access(budget=5, rng=rng, uniform=False), rng)
    assert sample.vertices[0] == 0


class _IsolatedSite(BudgetedAccess):
    """Vertices 0-1 linked, 2 isolated (as some of the world's are); uniform draws take ``draws`` in turn."""

    def __init__(self, budget: int, draws: list[int]) -> None:
        super().__init__(budget)
        self.neighbours, self.draws, self.turn = {0: [1], 1: [0], 2: []}, draws, 0

    def _fetch(self, v) -> VertexRecord:
        return VertexRecord(v, np.array(self.neighbours[v], dtype=np.int64), ContentCopies.from_rows([]))

    def _fetch_random(self) -> VertexRecord:
        self.turn += 1
        return self._fetch(self.draws[(self.turn - 1) % len(self.draws)])


@pytest.mark.parametrize("name", ["RW", "MHRW", "FS"])
def test_a_walk_drawn_onto_an_isolated_vertex_draws_its_start_again_and_pays_for_it(name):
    rng = np.random.default_rng(0)
    site = _IsolatedSite(budget=40, draws=[2, 2, 0, 2, 1])  # a walk there could never leave: the round had failed
    sample = SAMPLERS.create(name).sample(site, rng)
    assert site.queries == 40 and len(sample) > 0
    assert 2 not in sample.vertices.tolist()
    everywhere_isolated = _IsolatedSite(budget=10, draws=[2])
    assert len(SAMPLERS.create(name).sample(everywhere_isolated, rng)) == 0 and everywhere_isolated.queries == 10
    with pytest.raises(ValueError, match="start vertex 2 has no neighbours: .* give one that has"):
        SAMPLERS.create(name, start=2).sample(_IsolatedSite(budget=10, draws=[0]), rng)


def test_sample_take_regathers_copies(lollipop):
    rng = np.random.default_rng(0)
    sample = SAMPLERS.create("RW", start=2).sample(lollipop.access(budget=3, rng=rng), rng)
    again = sample.take(np.array([0, 0]))
    assert isinstance(again, Sample)
    assert again.vertices.tolist() == [2, 2]
    assert sorted(again.copies.content_id.tolist()) == [0, 0, 1, 1]
    assert again.copy_draw.tolist() == [0, 0, 1, 1]


def _contract_site(graph: InMemoryGraph) -> HttpSite:
    """The vertex-query contract of HttpGraphAccess: /graph/random.json (always vertex 4 here) and
    /graph/vertex/<id>.json, each the vertex's neighbours and content as JSON."""

    def answer(handler):
        if handler.path == "/graph/random.json":
            v = 4
        elif handler.path.startswith("/graph/vertex/") and handler.path.endswith(".json"):
            v = int(handler.path[len("/graph/vertex/") : -len(".json")])
        else:
            return 404, {}, b"not found"
        rec = graph.record(v)
        doc = {
            "id": str(v),
            "neighbors": [str(n) for n in rec.neighbors],
            "content": [
                {"content_id": f"c{c.content_id}", "label": str(c.label), "copies": c.copies, "special": c.special}
                for c in rec.content
            ],
        }
        return 200, {"Content-Type": "application/json"}, json.dumps(doc).encode()

    return HttpSite(default=answer)


def test_http_access_follows_the_documented_contract(lollipop):
    with _contract_site(lollipop) as site:
        access = HttpGraphAccess(site.url, budget=20, num_vertices=5)
        rec = access.random_vertex()
        assert rec.id == "4" and rec.neighbors.tolist() == ["3"]
        assert list(rec.content)[0] == ("c0", "a", 2, False)
        rng = np.random.default_rng(0)
        sample = SAMPLERS.create("RW").sample(access, rng)
        assert access.queries == 20 and len(sample) == 19
        assert sample.weights.tolist() == [float(DEGREES[int(v)]) for v in sample.vertices]
