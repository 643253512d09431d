"""One contract, every registered ranking method (the scikit-learn ``parametrize_with_checks`` idea)."""

from __future__ import annotations

import builtins
import math
import socket

import pytest

from focuscrawl.fue import RANKING_METHODS, RankingMethod, UserChooser, UserEvidence

ALL = RANKING_METHODS.names()


def _make(name: str, classifier, seed: int = 7) -> RankingMethod:
    return RANKING_METHODS.create(name, classifier=classifier, seed=seed)


def _candidates() -> list[UserEvidence]:
    return [
        UserEvidence("u0", 3, 10.0, 2.0, 5.5, 5.5, "football guitar", ("sports",)),
        UserEvidence("u1", 1, -2.0, 40.0, 23.0, 23.0, "depressed lonely insomnia", ("depression",)),
        UserEvidence("u2", 2, 150.0, 0.0, 12.0, 12.0, "recipe garden", ("food",)),
        UserEvidence("u3", 5, 1.0, 7.0, 18.5, 18.5, "hopeless therapy", ("depression", "sports")),
        UserEvidence("u4"),  # nothing seen yet
    ]


def test_the_paper_methods_are_all_registered() -> None:
    paper = ["RND", "HAS", "LAS", "HAC", "LAC", "N00", "N06", "N12", "N18", "HCP", "LCP",
             "HCP-0.9-0.1", "HCP-0.5-0.5", "HCP-POS", "FUSION-HCP-HAC", "FUSION-HCP-N06", "HIERARCHICAL"]
    assert set(paper) <= set(ALL)
    assert RANKING_METHODS.parse("hcp, rnd,n06") == ["HCP", "RND", "N06"]


@pytest.mark.parametrize("name", ALL)
def test_rank_is_a_deterministic_permutation(name: str, toy_classifier) -> None:
    cands = _candidates()
    first = _make(name, toy_classifier).rank(cands)
    again = _make(name, toy_classifier).rank(cands)
    assert first == again
    assert sorted(first) == sorted(e.user for e in cands)


@pytest.mark.parametrize("name", ALL)
def test_empty_evidence_and_empty_sets(name: str, toy_classifier) -> None:
    method = _make(name, toy_classifier)
    score = method.score(UserEvidence("nobody"))
    assert isinstance(score, float) and math.isfinite(score)
    assert method.rank([]) == []
    assert method.rank([UserEvidence("nobody")]) == ["nobody"]
    assert list(method.score_many([])) == []
    assert method.pick([[] for _ in method.components()], lambda u: UserEvidence(u)) is None


@pytest.mark.parametrize("name", ALL)
def test_scoring_does_no_io(name: str, toy_classifier, monkeypatch) -> None:
    method = _make(name, toy_classifier)

    def refuse(*args, **kwargs):
        raise AssertionError(f"{name} did I/O while scoring")

    monkeypatch.setattr(builtins, "open", refuse)
    monkeypatch.setattr(socket, "socket", refuse)
    method.score_many(_candidates())
    method.rank(_candidates())


@pytest.mark.parametrize("name", ALL)
def test_score_many_agrees_with_score(name: str, toy_classifier) -> None:
    method = _make(name, toy_classifier)
    cands = _candidates()
    assert list(method.score_many(cands)) == pytest.approx([method.score(e) for e in cands])


@pytest.mark.parametrize("name", ALL)
def test_chooser_hands_out_every_candidate_once(name: str, toy_classifier) -> None:
    chooser = UserChooser(_make(name, toy_classifier))
    chooser.rescore(_candidates())
    handed = []
    while (user := chooser.choose()) is not None:
        handed.append(user)
        chooser.feedback(user, relevant=user in ("u1", "u3"))
    assert sorted(handed) == ["u0", "u1", "u2", "u3", "u4"]
    assert chooser.choose() is None


@pytest.mark.parametrize("name", [n for n in ALL if n.startswith("HCP") or n == "HIERARCHICAL"])
def test_more_target_evidence_scores_higher(name: str, toy_classifier) -> None:
    method = _make(name, toy_classifier)
    weak = UserEvidence("a", 1, text="football weekend depressed")
    strong = UserEvidence("b", 3, text="football weekend depressed hopeless lonely insomnia")
    assert method.score(strong) > method.score(weak)


def test_lcp_reverses_hcp(toy_classifier) -> None:
    cands = _candidates()[:4]
    hcp = _make("HCP", toy_classifier).rank(cands)
    assert _make("LCP", toy_classifier).rank(cands) == hcp[::-1]
    assert set(hcp[:2]) == {"u1", "u3"}
