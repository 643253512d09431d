"""The user chooser: evidence in, one unique user out per request.

Seed ``000_c12b299f5bad9cdf.txt`` section III (User Updater, User Chooser) and Algorithm 1
(``users_ranking.update_user_features`` / ``get_first_user``): listings update a user's
features and rank; a free extractor gets the top user, which is marked processed and never
ranked or handed out again. Several chooser instances scale out by partitioning users by key
(Kafka partitions keyed by user), so each user lives in exactly one chooser.

The chooser does no I/O: a stream process feeds it posts and feedback and asks for users.
"""

from __future__ import annotations

from typing import Iterable

from focuscrawl.frontier import PriorityFrontier
from focuscrawl.fue.evidence import EvidenceAggregator, Post, UserEvidence
from focuscrawl.fue.methods import RankingMethod


class UserChooser:
    """PriorityFrontier(s) + a RankingMethod + the processed set."""

    def __init__(self, method: RankingMethod, evidence: EvidenceAggregator | None = None) -> None:
        self.method = method
        self.evidence = evidence if evidence is not None else EvidenceAggregator()
        self._components = method.components()
        self._frontiers = [PriorityFrontier() for _ in self._components]
        self.processed: set[str] = set()
        self._awaiting_feedback: dict[str, UserEvidence] = {}

    def __len__(self) -> int:
        return len(self._frontiers[0])

    def __contains__(self, user: object) -> bool:
        return user in self._frontiers[0]

    def add_posts(self, posts: Iterable[Post]) -> int:
        """Fold posts seen in a listing into their authors' evidence and re-rank them.

        Posts by processed users are ignored; returns how many candidates were (re)scored.
        Authors are scored as one batch, so a classifier runs once per listing.
        """
        changed: dict[str, UserEvidence] = {}
        for post in posts:
            if post.author in self.processed:
                continue
            snapshot = self.evidence.add(post)
            if snapshot is not None:
                changed[snapshot.user] = snapshot
        self.rescore(changed.values())
        return len(changed)

    def rescore(self, evidences: Iterable[UserEvidence]) -> None:
        """(Re)compute every component score of these candidates."""
        batch = [e for e in evidences if e.user not in self.processed]
        if not batch:
            return
        for component, frontier in zip(self._components, self._frontiers):
            for ev, score in zip(batch, component.score_many(batch)):
                frontier.update(ev.user, float(score))

    def set_scores(self, scores: Iterable[tuple[str, float]], component: int = 0) -> int:
        """Apply scores computed elsewhere (batch re-scoring after pseudo-training).

        Only users still waiting are touched; returns how many were.
        """
        frontier = self._frontiers[component]
        n = 0
        for user, score in scores:
            if user in frontier:
                frontier.update(user, score)
                n += 1
        return n

    def choose(self) -> str | None:
        """Hand out the next user (None when no candidate waits) and mark it processed."""
        if not self._frontiers[0]:
            return None
        if self.method.dynamic:
            self._refresh_head()
        tops = [f.top(self.method.depth) for f in self._frontiers]
        user = self.method.pick(tops, self.evidence.get)
        if user is None:
            return None
        for frontier in self._frontiers:
            frontier.discard(user)
        self.processed.add(user)
        self._awaiting_feedback[user] = self.evidence.get(user)
        self.evidence.forget(user)
        return user

    def feedback(self, user: str, relevant: bool) -> None:
        """The reference classifier's verdict on an extracted user (adaptive methods learn)."""
        evidence = self._awaiting_feedback.pop(user, None) or UserEvidence(user=user)
        self.method.observe(evidence, relevant)

    def top(self, k: int) -> list[tuple[str, float]]:
        """The ``k`` best waiting candidates by the first component score (for pushing, display)."""
        return self._frontiers[0].top(k)

    def _refresh_head(self) -> None:
        # Adaptive scores drift with feedback; re-scoring the head before each pick keeps
        # the choice current at O(depth) cost instead of re-scoring every candidate.
        head = [self.evidence.get(user) for user, _ in self._frontiers[0].top(self.method.depth)]
        self.rescore(head)
