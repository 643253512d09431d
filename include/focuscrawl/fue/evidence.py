"""User evidence seen in listings, and the user updater that aggregates it.

Seed 000 (*Real-time focused extraction of social media users*) sections II-B and IV: while communities are explored, every
post or comment seen in a listing updates its author's features: the average score (IV-B),
the average number of comments (IV-C), the average posting hour (IV-D) and the concatenation
of the titles and bodies seen so far (IV-E). The paper's User Updater keeps these per user; a
user's entry is dropped once the user is extracted (section II, space complexity).

Hours: the paper (and its code, ``feature_aggregator.py`` of blind-sniper/heuristics) uses the
*arithmetic* mean of decimal hours and then a circular distance to the target hour. That
mean is wrong across midnight (23:00 and 01:00 average to 12:00), so the aggregator keeps both
the arithmetic mean and the *circular* mean (angle of the summed unit vectors); the N-methods
choose which one to use.

Restarts: a user's running sums are an :class:`EvidenceState`, a typed record with
``to_dict``/``from_dict`` (exact: floats round-trip through JSON), so a stream chooser keeps them
in its changelog topic and :meth:`EvidenceAggregator.restore` puts them back; folding the same
posts live or restoring their state gives the same evidence (``tests/platform/test_restart_state_unit.py``).

Text watchers: :meth:`EvidenceAggregator.watch_texts` registers a listener told
of every part entering (``added``) or leaving (``removed``) a user's bounded text and of users
leaving (``dropped``), so HCP's score can follow the text post by post
(``focuscrawl.fue.textscore``) instead of re-vectorising all of it. A part is told as the snapshot
holds it: the text is the parts joined with newlines, and a part longer than ``max_text_chars``
only ever stands alone (every older part goes first), cut to its last ``max_text_chars``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterator

TAU = 2.0 * math.pi
HOURS_PER_DAY = 24.0


@dataclass(frozen=True, slots=True)
class Post:
    """One post or comment seen in a listing: the evidence a single listing gives about its author."""

    author: str
    created_utc: float
    score: float = 0.0
    num_comments: float = 0.0
    title: str = ""
    text: str = ""
    community: str = ""
    post_id: str = ""
    warc: tuple | None = None  # (file, offset, record id) of the listing's WARC record, when archived
    # The listing read that showed it and what chose that read (decision lineage, focuscrawl.lake.decision):
    # the front page's own order or the community chooser that picked the community; empty: not recorded.
    listing_url: str = ""
    fetched_at_ms: int = 0
    chosen_by: str = ""

    @property
    def hour(self) -> float:
        """Decimal UTC hour of posting, in [0, 24)."""
        t = datetime.fromtimestamp(self.created_utc, tz=timezone.utc)
        return t.hour + t.minute / 60.0 + t.second / 3600.0

    @property
    def body(self) -> str:
        return f"{self.title}\n{self.text}" if self.title and self.text else (self.title or self.text)


@dataclass(frozen=True, slots=True)
class UserEvidence:
    """What is known about a candidate user from listings, at one moment (a snapshot)."""

    user: str
    count: int = 0
    mean_score: float = 0.0
    mean_comments: float = 0.0
    mean_hour: float | None = None          # arithmetic mean, as in the paper
    circular_hour: float | None = None      # circular mean; None when undefined (no posts, or opposite hours)
    text: str = ""
    communities: tuple[str, ...] = ()

    def hour(self, mean: str) -> float | None:
        """The average posting hour by ``mean`` = ``"arithmetic"`` (paper) or ``"circular"``."""
        if mean == "arithmetic":
            return self.mean_hour
        if mean == "circular":
            return self.circular_hour
        raise ValueError(f"unknown hour mean {mean!r}; use 'arithmetic' or 'circular'")

    def to_dict(self) -> dict:
        return {"user": self.user, "count": self.count, "mean_score": self.mean_score,
                "mean_comments": self.mean_comments, "mean_hour": self.mean_hour,
                "circular_hour": self.circular_hour, "text": self.text, "communities": list(self.communities)}

    @classmethod
    def from_dict(cls, d: dict) -> "UserEvidence":
        return cls(user=d["user"], count=int(d["count"]), mean_score=float(d["mean_score"]),
                   mean_comments=float(d["mean_comments"]), mean_hour=d["mean_hour"],
                   circular_hour=d["circular_hour"], text=d["text"], communities=tuple(d["communities"]))


def hour_distance(a: float, b: float) -> float:
    """Distance between two hours on the 24 h circle (seed eq. 5): ``min(|a-b|, 24-|a-b|)``."""
    d = abs(a - b) % HOURS_PER_DAY
    return min(d, HOURS_PER_DAY - d)


@dataclass(slots=True)
class EvidenceState:
    """One user's running sums (what the User Updater keeps), and the ids of the posts counted."""

    count: int = 0
    score_sum: float = 0.0
    comments_sum: float = 0.0
    hour_sum: float = 0.0
    hour_sin: float = 0.0
    hour_cos: float = 0.0
    texts: list[str] = field(default_factory=list)
    text_len: int = 0
    communities: list[str] = field(default_factory=list)
    post_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"count": self.count, "score_sum": self.score_sum, "comments_sum": self.comments_sum,
                "hour_sum": self.hour_sum, "hour_sin": self.hour_sin, "hour_cos": self.hour_cos,
                "texts": list(self.texts), "text_len": self.text_len, "communities": list(self.communities),
                "post_ids": list(self.post_ids)}

    @classmethod
    def from_dict(cls, d: dict) -> "EvidenceState":
        return cls(count=int(d["count"]), score_sum=float(d["score_sum"]), comments_sum=float(d["comments_sum"]),
                   hour_sum=float(d["hour_sum"]), hour_sin=float(d["hour_sin"]), hour_cos=float(d["hour_cos"]),
                   texts=list(d["texts"]), text_len=int(d["text_len"]), communities=list(d["communities"]),
                   post_ids=list(d["post_ids"]))

    def copy(self) -> "EvidenceState":
        return EvidenceState.from_dict(self.to_dict())


class EvidenceAggregator:
    """The seed's User Updater: per-user running sums from posts seen in listings.

    ``max_text_chars`` bounds the concatenated text kept per user (the newest text is kept,
    oldest dropped), so memory stays bounded for very active users; ``max_communities``
    likewise bounds the communities remembered per user. Posts already counted (same
    ``post_id``) are ignored, as the paper did with Aerospike, because listings overlap.
    A post's id is remembered with its author only, the newest ``max_post_ids`` of them
    (listings overlap on recent posts), so the ids go when the user goes (extracted,
    or its partition moved) and memory is bounded by the users held, not the posts ever seen.
    """

    def __init__(self, max_text_chars: int = 20_000, max_communities: int = 16, dedupe: bool = True,
                 max_post_ids: int = 1_000) -> None:
        self.max_text_chars = max_text_chars
        self.max_communities = max_communities
        self.max_post_ids = max_post_ids
        self.dedupe = dedupe
        self._users: dict[str, EvidenceState] = {}
        self._seen_posts: dict[str, set[str]] = {}  # user -> the ids in its state's post_ids
        self._watchers: list = []

    def watch_texts(self, watcher, *, replay: bool = True) -> None:
        """Tell ``watcher`` (``added(user, part)``, ``removed(user, part)``, ``dropped(user)``) of every
        change to a user's text from now on, after telling it the texts held now (``replay=False``:
        it knows them already, as a scorer reading a ``UserTerms`` that listens here does)."""
        self._watchers.append(watcher)
        for user, acc in self._users.items() if replay else ():
            for part in acc.texts:
                watcher.added(user, self._kept(part))

    def unwatch_texts(self, watcher) -> None:
        """Stop telling ``watcher`` of text changes."""
        self._watchers = [w for w in self._watchers if w is not watcher]

    def _kept(self, part: str) -> str:
        # The snapshot cuts its text to the last max_text_chars: only a part that long, standing alone, is cut.
        return part[-self.max_text_chars:] if len(part) > self.max_text_chars else part

    def __len__(self) -> int:
        return len(self._users)

    def __contains__(self, user: object) -> bool:
        return user in self._users

    def users(self) -> Iterator[str]:
        return iter(self._users)

    def add(self, post: Post) -> UserEvidence | None:
        """Fold one post into its author's evidence; the new snapshot, or None if already counted."""
        seen = self._seen_posts.get(post.author)
        if self.dedupe and post.post_id and seen is not None and post.post_id in seen:
            return None
        acc = self._users.get(post.author)
        if acc is None:
            acc = self._users[post.author] = EvidenceState()
        if self.dedupe and post.post_id:
            if seen is None:
                seen = self._seen_posts[post.author] = set()
            seen.add(post.post_id)
            acc.post_ids.append(post.post_id)
            if len(acc.post_ids) > self.max_post_ids:
                seen.discard(acc.post_ids.pop(0))
        acc.count += 1
        acc.score_sum += post.score
        acc.comments_sum += post.num_comments
        hour = post.hour
        acc.hour_sum += hour
        angle = TAU * hour / HOURS_PER_DAY
        acc.hour_sin += math.sin(angle)
        acc.hour_cos += math.cos(angle)
        body = post.body
        if body:
            acc.texts.append(body)
            acc.text_len += len(body) + 1
            for watcher in self._watchers:
                watcher.added(post.author, self._kept(body))
            while acc.text_len > self.max_text_chars and len(acc.texts) > 1:
                gone = acc.texts.pop(0)
                acc.text_len -= len(gone) + 1
                for watcher in self._watchers:
                    watcher.removed(post.author, self._kept(gone))
        if post.community and post.community not in acc.communities:
            acc.communities.append(post.community)
            if len(acc.communities) > self.max_communities:
                acc.communities.pop(0)
        return self._snapshot(post.author, acc)

    def get(self, user: str) -> UserEvidence:
        """The user's evidence (empty evidence for an unknown user)."""
        acc = self._users.get(user)
        return UserEvidence(user=user) if acc is None else self._snapshot(user, acc)

    def forget(self, user: str) -> None:
        """Drop a user's evidence (after extraction, seed section II: space complexity)."""
        self._seen_posts.pop(user, None)
        if self._users.pop(user, None) is not None:
            for watcher in self._watchers:
                watcher.dropped(user)

    def state(self, user: str) -> EvidenceState | None:
        """A copy of the user's running sums (None for an unknown user), for a changelog."""
        acc = self._users.get(user)
        return None if acc is None else acc.copy()

    def restore(self, user: str, state: EvidenceState) -> None:
        """Put back a user's running sums read from a changelog; its posts count as seen again."""
        self._users[user] = acc = state.copy()
        self._seen_posts[user] = set(acc.post_ids)
        for watcher in self._watchers:
            watcher.dropped(user)
        for part in acc.texts:  # part by part to every watcher, in their order, as add() does
            for watcher in self._watchers:
                watcher.added(user, self._kept(part))

    def drop(self, user: str) -> None:
        """Forget a user and the ids of its posts (its partition moved to another chooser)."""
        self._seen_posts.pop(user, None)
        acc = self._users.pop(user, None)
        if acc is not None:
            for watcher in self._watchers:
                watcher.dropped(user)

    def _snapshot(self, user: str, acc: EvidenceState) -> UserEvidence:
        n = acc.count
        resultant = math.hypot(acc.hour_sin, acc.hour_cos)
        circular = None
        if n and resultant > 1e-9 * n:  # opposite hours cancel: no meaningful mean direction
            circular = (math.atan2(acc.hour_sin, acc.hour_cos) / TAU * HOURS_PER_DAY) % HOURS_PER_DAY
        text = "\n".join(acc.texts)
        if len(text) > self.max_text_chars:
            text = text[-self.max_text_chars:]
        return UserEvidence(
            user=user,
            count=n,
            mean_score=acc.score_sum / n if n else 0.0,
            mean_comments=acc.comments_sum / n if n else 0.0,
            mean_hour=acc.hour_sum / n if n else None,
            circular_hour=circular,
            text=text,
            communities=tuple(acc.communities),
        )
