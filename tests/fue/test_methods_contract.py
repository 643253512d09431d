"""What every registered ranking method owes beyond the shared contract.

Determinism for a seed, empty input, no I/O and the constructor convention are checked for every
registry by ``focuscrawl.testing.check_component`` (tests/test_component_contract.py); here are the
assertions only ranking methods have: a rank is a permutation, score and score_many agree, the
chooser hands every candidate out once, and the classifier-based ones order by target evidence.
"""

from __future__ import annotations

import math

import pytest

from focuscrawl.fue import RANKING_METHODS, RankingMethod, UserChooser, UserEvidence
from focuscrawl.testing import toy_candidates as _candidates

ALL = RANKING_METHODS.names()


def _make(name: str, classifier, seed: int = 7) -> RankingMethod:
    return RANKING_METHODS.create(name, classifier=classifier, seed=seed)


def test_the_paper_methods_are_all_registered() -> None:
    paper = ["RND", "HAS", "LAS", "HAC", "LAC", "N00", "N06", "N12", "N18", "HCP", "LCP",
             "HCP-0.9-0.1", "HCP-0.5-0.5", "HCP-POS", "FUSION-HCP-HAC", "FUSION-HCP-N06", "HIERARCHICAL"]
    assert set(paper) <= set(ALL)
    assert RANKING_METHODS.parse("hcp, rnd,n06") == ["HCP", "RND", "N06"]


@pytest.mark.parametrize("name", ALL)
def test_rank_is_a_permutation(name: str, toy_classifier) -> None:
    cands = _candidates()
    assert sorted(_make(name, toy_classifier).rank(cands)) == sorted(e.user for e in cands)


@pytest.mark.parametrize("name", ALL)
def test_a_user_with_no_evidence_gets_a_finite_score(name: str, toy_classifier) -> None:
    method = _make(name, toy_classifier)
    score = method.score(UserEvidence("nobody"))
    assert isinstance(score, float) and math.isfinite(score)
    assert method.rank([UserEvidence("nobody")]) == ["nobody"]


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
