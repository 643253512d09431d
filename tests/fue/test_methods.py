"""Known orders for each method family (sections IV and V of seed 000)."""

from __future__ import annotations

import pytest

from focuscrawl.fue import RANKING_METHODS, UserEvidence, mean_rank_fusion
from focuscrawl.fue.methods import HOUR_WINDOWS, NearHour


def ev(user, score=0.0, comments=0.0, hour=None, text="", communities=()):
    return UserEvidence(user, 1, score, comments, hour, hour, text, tuple(communities))


CANDS = [ev("a", 5, 1, 23.5), ev("b", -3, 9, 6.5), ev("c", 50, 4, 11.0), ev("d", 0, 0, 17.0)]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("HAS", ["c", "a", "d", "b"]),
        ("LAS", ["b", "d", "a", "c"]),
        ("HAC", ["b", "c", "a", "d"]),
        ("LAC", ["d", "a", "c", "b"]),
        ("N00", ["a", "b", "d", "c"]),   # distances 0.5, 6.5, 7, 11
        ("N06", ["b", "c", "a", "d"]),   # 0.5, 5, 6.5, 11
        ("N12", ["c", "d", "b", "a"]),   # 1, 5, 5.5, 11.5
        ("N18", ["d", "a", "c", "b"]),   # 1, 5.5, 7, 11.5
    ],
)
def test_feature_methods_order(name: str, expected: list[str]) -> None:
    assert RANKING_METHODS.create(name).rank(CANDS) == expected


def test_near_hour_can_use_the_circular_mean() -> None:
    # Posts at 23:00 and 01:00: the paper's mean says noon, the circular one midnight.
    user = UserEvidence("x", 2, mean_hour=12.0, circular_hour=0.0)
    assert RANKING_METHODS.create("N00").score(user) == -12.0
    assert RANKING_METHODS.create("N00", hour_mean="circular").score(user) == 0.0
    with pytest.raises(ValueError, match="hour_mean"):
        RANKING_METHODS.create("N00", hour_mean="median")


def test_the_hour_window_table_registers_one_method_per_row() -> None:
    windows = {n: RANKING_METHODS.get(n) for n in RANKING_METHODS.names() if issubclass(RANKING_METHODS.get(n), NearHour)}
    assert [(n, cls.name, cls.target) for n, cls in windows.items()] == [(n, n, h) for n, h in HOUR_WINDOWS]
    for name, hour in HOUR_WINDOWS:  # a user posting right in the window is at distance 0, the opposite hour at 12
        method = RANKING_METHODS.create(name)
        assert method.score(ev("x", hour=hour)) == 0.0 and method.score(ev("y", hour=(hour + 12) % 24)) == -12.0
        assert repr(method) == f"Near{name[1:]}(name={name!r})"


def test_random_depends_on_seed_only() -> None:
    users = [ev(f"u{i}") for i in range(50)]
    r0 = RANKING_METHODS.create("RND", seed=0).rank(users)
    assert RANKING_METHODS.create("RND", seed=0).rank(users[::-1]) == r0  # call order free
    assert RANKING_METHODS.create("RND", seed=1).rank(users) != r0


def test_classifier_methods_require_a_classifier() -> None:
    for name in ("HCP", "LCP", "HIERARCHICAL", "FUSION-HCP-HAC", "HCP-CB"):
        with pytest.raises(ValueError, match="classifier"):
            RANKING_METHODS.create(name)


def test_mean_rank_fusion_like_the_papers_code() -> None:
    # x: (1+3)/2=2; y: (2+1)/2=1.5; z: (3+2)/2=2.5; w only in the first: (4 + worst 3)/2=3.5
    assert mean_rank_fusion([["x", "y", "z", "w"], ["y", "z", "x"]], depth=100) == ["y", "x", "z", "w"]
    # only the top `depth` of each ranking takes part
    assert mean_rank_fusion([["x", "y", "z"], ["z", "y", "x"]], depth=1) == ["x", "z"]


def test_fusion_of_hcp_and_hac(toy_classifier) -> None:
    # HCP order A B C D E, HAC order E B D C A: mean positions A 3, B 2, C 3.5, D 3.5, E 3.
    cands = [
        ev("A", comments=0, text="depressed lonely hopeless insomnia"),
        ev("B", comments=30, text="depressed lonely hopeless"),
        ev("C", comments=10, text="depressed lonely"),
        ev("D", comments=20, text="depressed"),
        ev("E", comments=50, text="football guitar"),
    ]
    fusion = RANKING_METHODS.create("FUSION-HCP-HAC", classifier=toy_classifier)
    assert RANKING_METHODS.create("HCP", classifier=toy_classifier).rank(cands) == ["A", "B", "C", "D", "E"]
    assert fusion.rank(cands) == ["B", "A", "E", "C", "D"]
    assert [m.name for m in fusion.components()] == ["HCP", "HAC"]


def test_hierarchical_breaks_hcp_ties_by_n06_then_hac(toy_classifier) -> None:
    same = "depressed lonely"
    cands = [
        ev("far", comments=99, hour=18.0, text=same),
        ev("near-few", comments=1, hour=6.0, text=same),
        ev("near-many", comments=5, hour=6.0, text=same),
        ev("top", comments=0, hour=18.0, text="depressed lonely hopeless insomnia"),
    ]
    method = RANKING_METHODS.create("HIERARCHICAL", classifier=toy_classifier)
    assert method.rank(cands) == ["top", "near-many", "near-few", "far"]
    by_user = {e.user: e for e in cands}
    p = method.score(cands[0])
    tops = [[("far", p), ("near-few", p), ("near-many", p)]]
    assert method.pick(tops, by_user.__getitem__) == "near-many"


def test_community_bandit_is_hcp_until_feedback_then_prefers_productive_communities(toy_classifier) -> None:
    hcp = RANKING_METHODS.create("HCP", classifier=toy_classifier)
    cb = RANKING_METHODS.create("HCP-CB", classifier=toy_classifier)
    a = ev("a", text="depressed football", communities=["sports"])
    b = ev("b", text="depressed football", communities=["depression"])
    assert cb.score(a) == pytest.approx(hcp.score(a)) and cb.score(b) == pytest.approx(hcp.score(b))
    for i in range(20):
        cb.observe(ev(f"x{i}", communities=["depression"]), relevant=i % 4 != 0)  # 15/20 targets
        cb.observe(ev(f"y{i}", communities=["sports"]), relevant=False)
    assert cb.score(b) > hcp.score(b) > cb.score(a)
    assert cb.rank([a, b]) == ["b", "a"]
