"""User prioritisation methods: one protocol, one small class per method, registered by name.

Seed 000 (*Real-time focused extraction of social media users*) section IV (basic methods, Table 1: RND, HAS, LAS, HAC, LAC,
N00, N06, N12, N18, HCP, LCP) and section V (advanced: HCP with pseudo-training, rank fusion,
hierarchical). Where the truncated text of section V is silent, the behaviour follows the
paper's published code (blind-sniper/heuristics ``user_chooser.py``): fusion averages the
positions in the top 100 of each ranking, hierarchical breaks exact HCP ties by N06 then HAC.

Protocol (``RankingMethod``, a ``typing.Protocol`` as every registry's; ``_Method`` is what the methods share):
- ``score(evidence) -> float``: higher = extract sooner; pure, no I/O; ``score_many`` batches it.
- ``components()``: the per-candidate scores a chooser keeps a frontier for (just ``self``,
  except for fusion, which ranks over two frontiers).
- ``pick(tops, evidence_of) -> user``: choose among the ``depth`` best of each component
  frontier (the best one, except for fusion and hierarchical).
- ``rank(evidences) -> users``: the whole order over a candidate set (offline, tests).
- ``observe(evidence, relevant)``: feedback after the reference classifier judged an extracted
  user; only adaptive methods (``dynamic = True``) use it.

Every method takes the same keyword-only constructor arguments, so a registry name is all a
caller needs: ``RANKING_METHODS.create("HCP", classifier=clf)``. ``scorer`` says which model a
classifier-based method must be given: ``"reference"`` (the seed's HCP, section IV-E and V: "these
two classifiers are the same", the whole-user model scores the partial evidence) or
``"snippets"`` (HCP-SNIP, ours: a model fitted on short snippets, closer to what it scores).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from typing import Any, Callable, ClassVar, Protocol, Sequence

import numpy as np

from focuscrawl.fue.evidence import UserEvidence, hour_distance
from focuscrawl.core.registry import Registry

EvidenceOf = Callable[[str], UserEvidence]
Tops = Sequence[Sequence[tuple[str, float]]]
MAX_HOUR_DISTANCE = 12.0


class RankingMethod(Protocol):
    """What every prioritisation method offers (see the module docstring for each member)."""

    name: ClassVar[str]
    depth: ClassVar[int]
    dynamic: ClassVar[bool]
    needs_classifier: ClassVar[bool]
    scorer: ClassVar[str]   # which classifier a caller passes: "reference" or "snippets"
    classifier: Any         # the candidate classifier, or None; the chooser puts its text scorer in front

    def score(self, evidence: UserEvidence) -> float: ...

    def score_many(self, evidences: Sequence[UserEvidence]) -> np.ndarray: ...

    def components(self) -> tuple[RankingMethod, ...]: ...

    def pick(self, tops: Tops, evidence_of: EvidenceOf) -> str | None: ...

    def rank(self, evidences: Sequence[UserEvidence]) -> list[str]: ...

    def observe(self, evidence: UserEvidence, relevant: bool) -> None: ...


RANKING_METHODS: Registry[RankingMethod] = Registry("ranking method")


class _Method:
    """What the methods share: the constructor every one takes, and the single-frontier defaults."""

    name: ClassVar[str] = ""
    depth: ClassVar[int] = 1
    dynamic: ClassVar[bool] = False
    needs_classifier: ClassVar[bool] = False
    scorer: ClassVar[str] = "reference"

    def __init__(self, *, classifier=None, seed: int = 0, hour_mean: str = "arithmetic") -> None:
        if self.needs_classifier and classifier is None:
            raise ValueError(
                f"{self.name} scores users with a candidate classifier; "
                "pass classifier=UserClassifier.load(path) (see focuscrawl.fue.classifier)"
            )
        if hour_mean not in ("arithmetic", "circular"):
            raise ValueError(f"hour_mean must be 'arithmetic' (the paper) or 'circular', not {hour_mean!r}")
        self.classifier = classifier
        self.seed = seed
        self.hour_mean = hour_mean

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def score_many(self, evidences: Sequence[UserEvidence]) -> np.ndarray:
        return np.fromiter((self.score(e) for e in evidences), dtype=float, count=len(evidences))

    def components(self) -> tuple[RankingMethod, ...]:
        return (self,)

    def pick(self, tops: Tops, evidence_of: EvidenceOf) -> str | None:
        return tops[0][0][0] if tops and tops[0] else None

    def rank(self, evidences: Sequence[UserEvidence]) -> list[str]:
        """Candidates best first; ties keep the input (arrival) order, as the frontier does."""
        scores = self.score_many(evidences)
        order = np.lexsort((np.arange(len(evidences)), -scores))
        return [evidences[i].user for i in order]

    def observe(self, evidence: UserEvidence, relevant: bool) -> None:
        """Feedback on an extracted user; static methods ignore it."""

    def _kwargs(self) -> dict:
        return {"classifier": self.classifier, "seed": self.seed, "hour_mean": self.hour_mean}


# -- IV-A ---------------------------------------------------------------------------------------


@RANKING_METHODS.register("RND")
class Random(_Method):
    """RND (IV-A): a uniform random order, fixed by ``seed`` and the user name (call order free)."""

    name = "RND"

    def score(self, evidence: UserEvidence) -> float:
        digest = hashlib.blake2b(f"{self.seed}:{evidence.user}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2.0**64


# -- IV-B, IV-C ---------------------------------------------------------------------------------


class _AverageFeature(_Method):
    """Rank by a per-user average, descending (``sign=+1``) or ascending (``sign=-1``)."""

    sign: ClassVar[float] = 1.0
    feature: ClassVar[str] = ""

    def score(self, evidence: UserEvidence) -> float:
        return self.sign * getattr(evidence, self.feature)


@RANKING_METHODS.register("HAS")
class HighestAverageScore(_AverageFeature):
    """HAS (IV-B, eq. 1): highest average score (votes) of the user's texts seen so far."""

    name, feature, sign = "HAS", "mean_score", 1.0


@RANKING_METHODS.register("LAS")
class LowestAverageScore(_AverageFeature):
    """LAS (IV-B, eq. 2): lowest average score."""

    name, feature, sign = "LAS", "mean_score", -1.0


@RANKING_METHODS.register("HAC")
class HighestAverageComments(_AverageFeature):
    """HAC (IV-C, eq. 3): highest average number of comments on the user's posts."""

    name, feature, sign = "HAC", "mean_comments", 1.0


@RANKING_METHODS.register("LAC")
class LowestAverageComments(_AverageFeature):
    """LAC (IV-C, eq. 4): lowest average number of comments."""

    name, feature, sign = "LAC", "mean_comments", -1.0


# -- IV-D ---------------------------------------------------------------------------------------


class NearHour(_Method):
    """Nxx (IV-D, eq. 5): closest average posting hour to ``target`` on the 24 h circle.

    Score = minus the circular distance in hours; a user without an hour gets the largest
    distance (12 h). ``hour_mean`` picks the paper's arithmetic mean or the circular mean.
    Each row of :data:`HOUR_WINDOWS` registers a subclass fixing ``name`` and ``target``.
    """

    target: ClassVar[float] = 0.0

    @classmethod
    def window(cls, name: str, target: float) -> type[NearHour]:
        """The method posting near ``target`` o'clock UTC, named ``name`` (its own class, as the registry wants)."""
        return type(f"Near{target:02.0f}", (cls,), {
            "__doc__": f"{name}: posting near {target:02.0f}:00 UTC.", "__module__": cls.__module__,
            "name": name, "target": target})

    def distance(self, evidence: UserEvidence) -> float:
        hour = evidence.hour(self.hour_mean)
        return MAX_HOUR_DISTANCE if hour is None else hour_distance(hour, self.target)

    def score(self, evidence: UserEvidence) -> float:
        return -self.distance(evidence)


# Table 1's hour windows, (registry name, target hour UTC); N06 is the paper's second best basic method.
HOUR_WINDOWS = (("N00", 0.0), ("N06", 6.0), ("N12", 12.0), ("N18", 18.0))
for _name, _target in HOUR_WINDOWS:
    RANKING_METHODS.register(_name)(NearHour.window(_name, _target))


# -- IV-E ---------------------------------------------------------------------------------------


@RANKING_METHODS.register("HCP")
class HighestClassificationProbability(_Method):
    """HCP (IV-E, eq. 6): highest probability of the text seen so far, scored by the reference
    (whole-user) classifier itself, as in the paper ("these two classifiers are the same", V).

    ``set_classifier`` swaps the model in place, which is how pseudo-training (section V)
    reaches a running chooser. A classifier that follows each user's text post by post
    (``predict_proba_evidence``, ``focuscrawl.fue.textscore``, which a chooser puts in front of
    a plain one) gives the same probabilities without re-vectorising the whole text.
    """

    name = "HCP"
    needs_classifier = True

    def set_classifier(self, classifier) -> None:
        self.classifier = classifier

    def score(self, evidence: UserEvidence) -> float:
        return float(self._proba([evidence])[0])

    def score_many(self, evidences: Sequence[UserEvidence]) -> np.ndarray:
        return self._proba(evidences)

    def _proba(self, evidences: Sequence[UserEvidence]) -> np.ndarray:
        if not evidences:
            return np.empty(0)
        by_evidence = getattr(self.classifier, "predict_proba_evidence", None)
        if by_evidence is not None:
            return np.asarray(by_evidence(evidences), dtype=float)
        return np.asarray(self.classifier.predict_proba([e.text for e in evidences]), dtype=float)


@RANKING_METHODS.register("LCP")
class LowestClassificationProbability(HighestClassificationProbability):
    """LCP (IV-E, eq. 7): lowest probability first; the paper's safety check (should do worst)."""

    name = "LCP"

    def score(self, evidence: UserEvidence) -> float:
        return 1.0 - super().score(evidence)

    def score_many(self, evidences: Sequence[UserEvidence]) -> np.ndarray:
        return 1.0 - super().score_many(evidences)


@RANKING_METHODS.register("HCP-SNIP")
class HCPSnippets(HighestClassificationProbability):
    """HCP-SNIP (ours, not the paper's): HCP scored by a classifier trained on snippets of a few
    writings of the training users (``focuscrawl.fue.classifier.train_candidate_classifier``)."""

    name, scorer = "HCP-SNIP", "snippets"


# -- V: HCP with pseudo-training ----------------------------------------------------------------


class _PseudoTrainedHCP(HighestClassificationProbability):
    """HCP whose prediction classifier is periodically retrained with pseudo-labelled users.

    Scoring is HCP's, starting from the reference model; every five simulated minutes a new
    model is fitted on the original whole-user training set plus the pseudo-examples (section V).
    ``pseudo_labelling`` (positive_at, negative_at or None) tells ``focuscrawl.fue.pseudo`` which
    extracted users join the training set.
    """

    pseudo_labelling: ClassVar[tuple[float, float | None]] = (0.9, 0.1)


@RANKING_METHODS.register("HCP-0.9-0.1")
class HCPPseudo0901(_PseudoTrainedHCP):
    """HCP-0.9-0.1 (V): users judged >= 0.9 join as positives, <= 0.1 as negatives."""

    name, pseudo_labelling = "HCP-0.9-0.1", (0.9, 0.1)


@RANKING_METHODS.register("HCP-0.5-0.5")
class HCPPseudo0505(_PseudoTrainedHCP):
    """HCP-0.5-0.5 (V): the classifier's standard 0.5 threshold splits every extracted user."""

    name, pseudo_labelling = "HCP-0.5-0.5", (0.5, 0.5)


@RANKING_METHODS.register("HCP-POS")
class HCPPseudoPositives(_PseudoTrainedHCP):
    """HCP-POS (V, positives-only variant): only users judged >= 0.9 join, as positives."""

    name, pseudo_labelling = "HCP-POS", (0.9, None)


# -- V: rank fusion -----------------------------------------------------------------------------


def mean_rank_fusion(rankings: Sequence[Sequence[str]], depth: int) -> list[str]:
    """Fuse rankings by the mean of 1-based positions in the top ``depth`` of each.

    A user missing from a ranking's top gets that ranking's worst position there (its length,
    at most ``depth``), as in the paper's code. Lower mean first; ties by first appearance.
    """
    tops = [list(r[:depth]) for r in rankings]
    where = [{user: pos for pos, user in enumerate(top, start=1)} for top in tops]
    worst = [max(len(top), 1) for top in tops]
    first_seen = list(dict.fromkeys(user for top in tops for user in top))
    mean = {u: sum(w.get(u, worst[j]) for j, w in enumerate(where)) / len(tops) for u in first_seen}
    order = sorted(enumerate(first_seen), key=lambda iu: (mean[iu[1]], iu[0]))
    return [user for _, user in order]


class _RankFusion(_Method):
    """Fusion (V): mean-rank fusion of the top ``depth`` candidates of two base methods."""

    depth = 100
    fused: ClassVar[tuple[str, str]] = ("HCP", "HAC")
    needs_classifier = True

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._parts = tuple(RANKING_METHODS.create(name, **self._kwargs()) for name in self.fused)

    def components(self) -> tuple[RankingMethod, ...]:
        return self._parts

    def set_classifier(self, classifier) -> None:
        self.classifier = classifier
        for part in self._parts:
            if hasattr(part, "set_classifier"):
                part.set_classifier(classifier)

    def score(self, evidence: UserEvidence) -> float:
        """Fusion ranks over a set; a lone candidate's score is its first component's."""
        return self._parts[0].score(evidence)

    def pick(self, tops: Tops, evidence_of: EvidenceOf) -> str | None:
        fused = mean_rank_fusion([[u for u, _ in top] for top in tops], self.depth)
        return fused[0] if fused else None

    def rank(self, evidences: Sequence[UserEvidence]) -> list[str]:
        return mean_rank_fusion([part.rank(evidences) for part in self._parts], max(len(evidences), 1))


@RANKING_METHODS.register("FUSION-HCP-HAC")
class FusionHCPHAC(_RankFusion):
    """Rank fusion of HCP and HAC (section V)."""

    name, fused = "FUSION-HCP-HAC", ("HCP", "HAC")


@RANKING_METHODS.register("FUSION-HCP-N06")
class FusionHCPN06(_RankFusion):
    """Rank fusion of HCP and N06 (what the paper's published chooser actually fuses)."""

    name, fused = "FUSION-HCP-N06", ("HCP", "N06")


# -- V: hierarchical ----------------------------------------------------------------------------


@RANKING_METHODS.register("HIERARCHICAL")
class Hierarchical(HighestClassificationProbability):
    """Hierarchical (V): HCP; exact ties broken by N06 (closest to 06:00), then by HAC.

    The frontier holds HCP scores; ``pick`` looks at the tied head of it (up to ``depth``).
    """

    name = "HIERARCHICAL"
    depth = 100

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._n06 = RANKING_METHODS.create("N06", **self._kwargs())

    def tie_key(self, evidence: UserEvidence) -> tuple[float, float]:
        return (self._n06.score(evidence), evidence.mean_comments)

    def pick(self, tops: Tops, evidence_of: EvidenceOf) -> str | None:
        if not tops or not tops[0]:
            return None
        best = tops[0][0][1]
        tied = [u for u, s in tops[0] if s == best]
        if len(tied) == 1:
            return tied[0]
        keys = [self.tie_key(evidence_of(u)) for u in tied]
        return tied[max(range(len(tied)), key=lambda i: (keys[i], -i))]

    def rank(self, evidences: Sequence[UserEvidence]) -> list[str]:
        p = self.score_many(evidences)
        keys = [self.tie_key(e) for e in evidences]
        order = sorted(range(len(evidences)), key=lambda i: (-p[i], -keys[i][0], -keys[i][1], i))
        return [evidences[i].user for i in order]


@RANKING_METHODS.register("HIERARCHICAL-R2")
class HierarchicalRounded(Hierarchical):
    """Hierarchical with ties that matter (ours): HCP probabilities rounded to 2 decimals, so users
    within the same hundredth of probability are ordered by N06, then HAC.

    With exact ties only, HIERARCHICAL is HCP (continuous probabilities almost never tie); the
    truncated section V does not say how close two probabilities must be to count as tied.
    """

    name = "HIERARCHICAL-R2"
    decimals: ClassVar[int] = 2

    def score_many(self, evidences: Sequence[UserEvidence]) -> np.ndarray:
        return np.round(super().score_many(evidences), self.decimals)

    def score(self, evidence: UserEvidence) -> float:
        return float(self.score_many([evidence])[0])


# -- our own: HCP with a community bandit -------------------------------------------------------


@RANKING_METHODS.register("HCP-CB")
class HCPCommunityBandit(HighestClassificationProbability):
    """HCP-CB (ours): HCP's log-odds shifted by an optimistic estimate of where targets live.

    Every extracted user judged by the reference classifier is feedback (``observe``) for the
    communities the user was seen in: a Beta-Bernoulli posterior of each community's target
    rate, read optimistically (UCB, ``exploration`` x standard deviation) so a community
    with few extractions gets a chance. A candidate's score is
    ``sigmoid(logit(p) + weight * (logit(q_c) - logit(q)))`` with ``q_c`` the best UCB among
    the user's communities and ``q`` the overall rate: no feedback, or no community, = HCP.
    The seed (section II-B) picks communities at random and notes better selection is
    possible; this pushes that knowledge into the user ranking, where text alone is thin.
    """

    name = "HCP-CB"
    dynamic = True
    depth = 32
    weight: ClassVar[float] = 1.0
    exploration: ClassVar[float] = 1.0
    prior_strength: ClassVar[float] = 2.0

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._hits: dict[str, int] = defaultdict(int)
        self._trials: dict[str, int] = defaultdict(int)
        self._total_hits = 0
        self._total = 0

    def observe(self, evidence: UserEvidence, relevant: bool) -> None:
        self._total += 1
        self._total_hits += int(relevant)
        for community in evidence.communities:
            self._trials[community] += 1
            self._hits[community] += int(relevant)

    def overall_rate(self) -> float:
        return (self._total_hits + 1.0) / (self._total + 2.0)

    def community_ucb(self, community: str) -> float:
        base = self.overall_rate()
        a = self.prior_strength * base + self._hits.get(community, 0)
        b = self.prior_strength * (1.0 - base) + self._trials.get(community, 0) - self._hits.get(community, 0)
        mean = a / (a + b)
        sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
        return min(mean + self.exploration * sd, 1.0 - 1e-6)

    def shift(self, evidence: UserEvidence) -> float:
        if self._total == 0 or not evidence.communities:
            return 0.0
        q = self.overall_rate()
        best = max(self.community_ucb(c) for c in evidence.communities)
        return self.weight * (_logit(best) - _logit(q))

    def score_many(self, evidences: Sequence[UserEvidence]) -> np.ndarray:
        p = np.clip(super().score_many(evidences), 1e-9, 1.0 - 1e-9)
        shifts = np.fromiter((self.shift(e) for e in evidences), dtype=float, count=len(evidences))
        return 1.0 / (1.0 + np.exp(-(np.log(p / (1.0 - p)) + shifts)))

    def score(self, evidence: UserEvidence) -> float:
        return float(self.score_many([evidence])[0])


def _logit(x: float) -> float:
    x = min(max(x, 1e-9), 1.0 - 1e-9)
    return math.log(x / (1.0 - x))


@RANKING_METHODS.register("HCP-CB-0.9-0.1")
class HCPCommunityBanditPseudo(HCPCommunityBandit):
    """HCP-CB with pseudo-training (ours + section V): HCP-CB whose classifier is retrained as
    HCP-0.9-0.1's is (users judged >= 0.9 join as positives, <= 0.1 as negatives)."""

    name = "HCP-CB-0.9-0.1"
    pseudo_labelling: ClassVar[tuple[float, float | None]] = (0.9, 0.1)
