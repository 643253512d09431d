"""The frontiers against a brute-force model (a dict searched with max on every pop).

Every test runs over both structures: the indexed heap ``PriorityFrontier`` and ``BlockFrontier``
(blocks of 4 slots here, so updates, pops and ``top`` cross many blocks; 4096 in use).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from functools import partial

from focuscrawl.core.frontier import BlockFrontier, PriorityFrontier

FRONTIERS = [PriorityFrontier, partial(BlockFrontier, block_bits=2)]
each_frontier = pytest.mark.parametrize("make", FRONTIERS, ids=["heap", "blocks"])

KEYS = st.sampled_from([f"u{i}" for i in range(12)])
# Few distinct scores so ties (and the insertion-order tie-break) happen all the time.
SCORES = st.one_of(st.sampled_from([0.0, 1.0, 2.0, -1.0]), st.floats(-1e6, 1e6, allow_nan=False))


class Model:
    def __init__(self) -> None:
        self.entries: dict[str, tuple[float, int]] = {}
        self.seq = 0

    def update(self, key: str, score: float) -> None:
        if key in self.entries:
            self.entries[key] = (score, self.entries[key][1])
        else:
            self.entries[key] = (score, self.seq)
            self.seq += 1

    def top(self) -> tuple[str, float]:
        key = max(self.entries, key=lambda k: (self.entries[k][0], -self.entries[k][1]))
        return key, self.entries[key][0]


class FrontierMachine(RuleBasedStateMachine):
    make = PriorityFrontier

    def __init__(self) -> None:
        super().__init__()
        self.frontier = type(self).make()
        self.model = Model()

    @rule(key=KEYS, score=SCORES)
    def update(self, key: str, score: float) -> None:
        self.frontier.update(key, score)
        self.model.update(key, score)

    @precondition(lambda self: self.model.entries)
    @rule()
    def pop(self) -> None:
        expected = self.model.top()
        del self.model.entries[expected[0]]
        assert self.frontier.pop() == expected

    @precondition(lambda self: self.model.entries)
    @rule()
    def peek(self) -> None:
        assert self.frontier.peek() == self.model.top()

    @rule(key=KEYS)
    def remove(self, key: str) -> None:
        if key in self.model.entries:
            assert self.frontier.remove(key) == self.model.entries.pop(key)[0]
        else:
            with pytest.raises(KeyError):
                self.frontier.remove(key)

    @invariant()
    def same_contents(self) -> None:
        assert len(self.frontier) == len(self.model.entries)
        for key in [f"u{i}" for i in range(12)]:
            assert (key in self.frontier) == (key in self.model.entries)
            if key in self.model.entries:
                assert self.frontier.score_of(key) == self.model.entries[key][0]
        assert sorted(self.frontier.items()) == sorted((k, v[0]) for k, v in self.model.entries.items())


    @rule(k=st.integers(0, 14))
    def top(self, k: int) -> None:
        ranked = sorted(self.model.entries.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
        assert self.frontier.top(k) == [(key, v[0]) for key, v in ranked[:k]]


class BlockFrontierMachine(FrontierMachine):
    make = partial(BlockFrontier, block_bits=2)


TestFrontierAgainstModel = FrontierMachine.TestCase
TestFrontierAgainstModel.settings = settings(max_examples=80, stateful_step_count=50, deadline=None)
TestBlockFrontierAgainstModel = BlockFrontierMachine.TestCase
TestBlockFrontierAgainstModel.settings = settings(max_examples=80, stateful_step_count=50, deadline=None)


@each_frontier
@given(st.lists(st.tuples(st.text(max_size=4), SCORES), max_size=200))
@settings(max_examples=100, deadline=None)
def test_drain_is_sorted_by_score_then_first_insertion(make, ops: list[tuple[str, float]]) -> None:
    frontier, model = make(), Model()
    for key, score in ops:
        frontier.update(key, score)
        model.update(key, score)
    expected = sorted(model.entries.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    assert [frontier.pop() for _ in range(len(frontier))] == [(k, v[0]) for k, v in expected]


@each_frontier
def test_ties_come_out_in_insertion_order_even_after_updates(make) -> None:
    f = make([("c", 1.0), ("a", 1.0), ("b", 0.0)])
    f.update("b", 1.0)  # b joins the tie but was inserted last
    f.update("a", 1.0)  # an unchanged score keeps a's place
    assert [f.pop()[0] for _ in range(3)] == ["c", "a", "b"]


@each_frontier
def test_reinserted_key_goes_behind_equal_scores(make) -> None:
    f = make([("a", 1.0), ("b", 1.0)])
    f.remove("a")
    f.update("a", 1.0)
    assert f.pop() == ("b", 1.0)


@each_frontier
def test_slots_are_recycled(make) -> None:
    f = make()
    for round_ in range(5):
        for i in range(100):
            f.update(f"k{round_}-{i}", float(i))
        while f:
            f.pop()
    assert len(f._keys) == 100  # five rounds of 100 reuse the same 100 slots


@each_frontier
def test_errors_say_what_happened(make) -> None:
    f = make()
    with pytest.raises(IndexError, match="empty"):
        f.pop()
    with pytest.raises(IndexError, match="empty"):
        f.peek()
    with pytest.raises(KeyError):
        f.score_of("nobody")
    with pytest.raises(ValueError, match="NaN"):
        f.update("x", float("nan"))
    f.discard("nobody")
    assert len(f) == 0


@each_frontier
def test_infinite_scores_are_ordered(make) -> None:
    f = make([("lo", float("-inf")), ("mid", 0.0), ("hi", float("inf"))])
    assert [f.pop()[0] for _ in range(3)] == ["hi", "mid", "lo"]


@each_frontier
@given(st.lists(st.tuples(KEYS, SCORES), max_size=40), st.integers(0, 15))
@settings(max_examples=100, deadline=None)
def test_top_k_is_the_first_k_pops_and_removes_nothing(make, ops: list[tuple[str, float]], k: int) -> None:
    frontier = make(ops)
    before = sorted(frontier.items())
    top = frontier.top(k)
    assert sorted(frontier.items()) == before
    assert top == [frontier.pop() for _ in range(min(k, len(before)))]
