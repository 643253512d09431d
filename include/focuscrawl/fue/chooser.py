"""The user chooser: evidence in, one unique user out per request.

Seed 000 (*Real-time focused extraction of social media users*) section III (User Updater, User Chooser) and Algorithm 1
(``users_ranking.update_user_features`` / ``get_first_user``): listings update a user's
features and rank; a free extractor gets the top user, which is marked processed and never
ranked or handed out again. Several chooser instances scale out by partitioning users by key
(Kafka partitions keyed by user), so each user lives in exactly one chooser.

The chooser does no I/O: a stream process feeds it posts and feedback and asks for users.

Restart-safe state: every user the chooser has touched has a
:class:`UserState` (a typed record, ``to_json``/``from_json``): a *candidate* with its running
evidence sums and its frontier score(s), a *chosen* user waiting for its verdict, or a *judged*
one. :meth:`UserChooser.changes` hands out the states changed since the last call (the stream
process writes them to a compacted changelog topic keyed by user, in the same Kafka transaction
as its outputs and input offsets) and :meth:`UserChooser.restore` rebuilds a chooser from them:
candidates re-enter the frontiers in their arrival order with their stored scores (so ties,
pushed scores and the classifier's scores at the time are kept as they were), chosen users are in
flight again, judged users are processed and, for adaptive methods, their verdicts are observed
again in their order. A restored chooser ranks and picks exactly as one that never stopped.

Keeping up: a chooser folds thousands of posts for every user it hands out.
Its frontiers are :class:`~focuscrawl.core.frontier.BlockFrontier` (O(1) updates; pops read a block),
and a classifier-based method (HCP and its variants, section IV-E) gets its classifier wrapped in
an :class:`~focuscrawl.fue.textscore.IncrementalTextScorer` that follows every candidate's text
post by post, so a post costs its own length, not the whole text's (``incremental_text=False``
re-vectorises the whole text per post, as before: the baseline of ``bench/chooser_bench.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from focuscrawl.core.frontier import BlockFrontier
from focuscrawl.fue.evidence import EvidenceAggregator, EvidenceState, Post, UserEvidence
from focuscrawl.fue.methods import RankingMethod
from focuscrawl.fue.pipeline import ExtractRequest, StatsEvent
from focuscrawl.fue.textscore import IncrementalTextScorer, UserTerms, tokeniser_key
from focuscrawl.core.records import JsonRecord
from focuscrawl.lake.decision import Decision

STATUSES = ("candidate", "chosen", "judged")


@dataclass(frozen=True, slots=True)
class UserState(JsonRecord):
    """One user's state in a chooser, as its changelog record holds it.

    ``seq`` orders the records of one status: arrival order of candidates (the frontier's
    tie-break), choice order of chosen users, verdict order of judged ones. ``scores`` and
    ``evidence`` belong to candidates; ``snapshot`` is the evidence at the time of choice (what
    ``feedback`` gives an adaptive method), kept for chosen users and, when the method is
    adaptive, for judged ones with their verdict ``relevant``. ``pushed`` is what the latest push that scored
    a candidate said (model, version, score, rank: :class:`~focuscrawl.lake.decision.Decision`), kept by the
    stream stage so that a restored chooser names the same push when it chooses the user; records written
    before it existed restore with none.
    """

    user: str
    status: str
    seq: int
    scores: tuple[float, ...] = ()
    evidence: EvidenceState | None = None
    snapshot: UserEvidence | None = None
    relevant: bool | None = None
    pushed: Decision | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"user state {self.status!r} of {self.user!r}: use one of {', '.join(STATUSES)}")


class UserChooser:
    """BlockFrontier(s) + a RankingMethod + the processed set."""

    def __init__(self, method: RankingMethod, evidence: EvidenceAggregator | None = None, *,
                 incremental_text: bool = True) -> None:
        self.method = method
        self.evidence = evidence if evidence is not None else EvidenceAggregator()
        self._components = method.components()
        self._frontiers = [BlockFrontier() for _ in self._components]
        self.incremental_text = incremental_text
        self._scorers: list[IncrementalTextScorer | None] = [None] * len(self._components)
        self._terms: dict[tuple, UserTerms] = {}  # tokeniser -> the token counts its models' scorers share
        self._follow_texts()
        self.processed: set[str] = set()
        self.chosen_score_: float | None = None  # the last chosen user's first component score when chosen
        self._awaiting_feedback: dict[str, UserEvidence] = {}  # chosen, no verdict yet (choice order)
        self._seq: dict[str, int] = {}  # candidate -> arrival, chosen -> choice order
        self._tick = 0
        self._changed: dict[str, None] = {}  # users whose state changed since changes() (ordered)
        self._judged: dict[str, tuple[int, UserEvidence, bool]] = {}  # verdicts since changes()

    def __len__(self) -> int:
        return len(self._frontiers[0])

    def __contains__(self, user: object) -> bool:
        return user in self._frontiers[0]

    def add_posts(self, posts: Iterable[Post], order: int | None = None) -> int:
        """Fold posts seen in a listing into their authors' evidence and re-rank them.

        Posts by processed users are ignored; returns how many candidates were (re)scored.
        Authors are scored as one batch, so a classifier runs once per listing. ``order``: the
        arrival order of the authors new here (ties among equal scores go to the earliest), by
        default the call order; a stream chooser gives the log position of the post
        (:func:`log_order`), so every consumer of the log, restarted or not, breaks ties alike.
        """
        changed: dict[str, UserEvidence] = {}
        for post in posts:
            if post.author in self.processed:
                continue
            snapshot = self.evidence.add(post)
            if snapshot is not None:
                changed[snapshot.user] = snapshot
                if snapshot.user not in self._seq:
                    self._seq[snapshot.user] = self._next() if order is None else int(order)
        self.rescore(changed.values())
        return len(changed)

    def rescore(self, evidences: Iterable[UserEvidence]) -> None:
        """(Re)compute every component score of these candidates."""
        batch = [e for e in evidences if e.user not in self.processed]
        if not batch:
            return
        self._follow_texts()
        for component, frontier in zip(self._components, self._frontiers):
            for ev, score in zip(batch, component.score_many(batch)):
                frontier.update(ev.user, float(score), self._seq.get(ev.user))
        self._changed.update(dict.fromkeys(ev.user for ev in batch))

    def set_scores(self, scores: Iterable[tuple[str, float]], component: int = 0) -> int:
        """Apply scores computed elsewhere (batch re-scoring after pseudo-training).

        Only users still waiting are touched; returns how many were.
        """
        frontier = self._frontiers[component]
        n = 0
        for user, score in scores:
            if user in frontier:
                frontier.update(user, score)
                self._changed[user] = None
                n += 1
        return n

    def set_classifier(self, classifier) -> int:
        """Score with a new classifier from now on (the example users changed, or a rollback): every waiting
        candidate is rescored by it, so none keeps a score the old model gave (a pushed score included: the push
        was made from the old one); returns how many were."""
        self.method.set_classifier(classifier)
        waiting = [self.evidence.get(user) for user, _ in self._frontiers[0].items()]
        self.rescore(waiting)
        return len(waiting)

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
        self.chosen_score_ = self._frontiers[0].score_of(user) if user in self._frontiers[0] else None
        for frontier in self._frontiers:
            frontier.discard(user)
        self.processed.add(user)
        self._awaiting_feedback[user] = self.evidence.get(user)
        self.evidence.forget(user)
        self._seq[user] = self._next()
        self._changed[user] = None
        return user

    def feedback(self, user: str, relevant: bool) -> None:
        """The reference classifier's verdict on an extracted user (adaptive methods learn)."""
        evidence = self._awaiting_feedback.pop(user, None) or UserEvidence(user=user)
        self.method.observe(evidence, relevant)
        if user in self.processed:
            self._seq.pop(user, None)
            self._judged[user] = (self._next(), evidence, bool(relevant))
            self._changed[user] = None

    @property
    def awaiting(self) -> list[str]:
        """Chosen users without a verdict yet, in the order they were chosen."""
        return list(self._awaiting_feedback)

    @property
    def in_flight(self) -> int:
        """How many chosen users wait for their verdict."""
        return len(self._awaiting_feedback)

    def waits_for(self, user: str) -> bool:
        """Whether ``user`` was chosen and has no verdict yet."""
        return user in self._awaiting_feedback

    # -- restart-safe state ---------------------------------------------------------------------

    def state_of(self, user: str) -> UserState | None:
        """The user's current state (None for a user the chooser never saw).

        A judged user's snapshot and verdict are known only until the next :meth:`changes`.
        """
        if user in self._frontiers[0]:
            return UserState(user, "candidate", self._seq[user], tuple(f.score_of(user) for f in self._frontiers),
                             evidence=self.evidence.state(user))
        if user in self._awaiting_feedback:
            return UserState(user, "chosen", self._seq[user], snapshot=self._awaiting_feedback[user])
        if user in self.processed:
            seq, snapshot, relevant = self._judged.get(user, (0, None, None))
            keep = snapshot if self.method.dynamic else None  # only adaptive methods replay verdicts
            return UserState(user, "judged", seq, snapshot=keep, relevant=relevant)
        return None

    def changes(self) -> list[UserState]:
        """The states changed since the previous call, in the order they changed (then forgotten)."""
        out = [state for state in map(self.state_of, self._changed) if state is not None]
        self._changed.clear()
        self._judged.clear()
        return out

    def restore(self, states: Iterable[UserState]) -> int:
        """Add users from their changelog states (the latest state per user); returns how many.

        Candidates enter the frontiers in arrival order with their stored scores, chosen users
        wait for their verdict again, judged users are processed and their verdicts are observed
        again in verdict order (adaptive methods). Restored users are not reported by :meth:`changes`.
        """
        states = list(states)
        for state in sorted(states, key=lambda st: (STATUSES.index(st.status), st.seq)):
            user = state.user
            self.drop([user])
            if state.status == "candidate":
                if len(state.scores) != len(self._frontiers) or state.evidence is None:
                    raise ValueError(f"changelog state of {user!r} has {len(state.scores)} scores for "
                                     f"{len(self._frontiers)} components of {self.method.name}: the changelog "
                                     "belongs to another method; give the chooser its own consumer group")
                self.evidence.restore(user, state.evidence)
                for frontier, score in zip(self._frontiers, state.scores):
                    frontier.update(user, score, state.seq)
                self._seq[user] = state.seq
            else:
                self.processed.add(user)
                if state.status == "chosen":
                    self._awaiting_feedback[user] = state.snapshot or UserEvidence(user=user)
                    self._seq[user] = state.seq
                elif state.relevant is not None and state.snapshot is not None:
                    self.method.observe(state.snapshot, state.relevant)
            self._tick = max(self._tick, state.seq + 1)
        return len(states)

    def drop(self, users: Iterable[str]) -> None:
        """Forget these users entirely (their partition went to another chooser instance)."""
        for user in users:
            for frontier in self._frontiers:
                frontier.discard(user)
            self.evidence.drop(user)
            self.processed.discard(user)
            self._awaiting_feedback.pop(user, None)
            self._seq.pop(user, None)
            self._changed.pop(user, None)
            self._judged.pop(user, None)

    def _next(self) -> int:
        self._tick += 1
        return self._tick

    def text_scoring(self) -> str:
        """How the classifier-based components score text, for the process's start-up log."""
        parts = []
        for component, scorer in zip(self._components, self._scorers):
            if getattr(component, "classifier", None) is None:
                continue
            if scorer is not None:
                parts.append(f"{component.name}: incremental (term counts per user)")
            else:
                why = ("incremental_text=False" if not self.incremental_text
                       else IncrementalTextScorer.unsupported(component.classifier) or "wrapped elsewhere")
                parts.append(f"{component.name}: re-vectorising the whole text per post ({why})")
        return "; ".join(parts) or "no classifier"

    def _follow_texts(self) -> None:
        """Put an incremental text scorer in front of each component's classifier, once per model.

        A component whose classifier was swapped (``set_classifier``, pseudo-training) gets a new
        scorer, built from the token counts of the held texts (one ``UserTerms`` per tokeniser, so a
        swap maps each user's distinct tokens, not every part again); one scorer serves every component with
        the same classifier (fusion); a classifier it cannot mirror keeps re-vectorising.
        """
        if not self.incremental_text:
            return
        for i, component in enumerate(self._components):
            current = getattr(component, "classifier", None)
            scorer = self._scorers[i]
            if current is None or current is scorer:
                continue
            if scorer is not None and scorer not in self._scorers[:i] + self._scorers[i + 1:]:
                self.evidence.unwatch_texts(scorer)
            shared = next((s for s in self._scorers if s is not None and s.classifier is current), None)
            if shared is not None:
                scorer = shared
            elif isinstance(current, IncrementalTextScorer) or not IncrementalTextScorer.supports(current):
                self._scorers[i] = None
                continue
            else:
                key = tokeniser_key(current.vectorizer_)
                terms = self._terms.get(key)
                if terms is None:  # listens before every scorer reading it (UserTerms.told)
                    terms = self._terms[key] = UserTerms(current.vectorizer_)
                    self.evidence.watch_texts(terms)
                scorer = IncrementalTextScorer(current, terms)
                scorer.follow_held()
                self.evidence.watch_texts(scorer, replay=False)
            component.classifier = scorer
            self._scorers[i] = scorer

    def top(self, k: int) -> list[tuple[str, float]]:
        """The ``k`` best waiting candidates by the first component score (for pushing, display)."""
        return self._frontiers[0].top(k)

    def _refresh_head(self) -> None:
        # Adaptive scores drift with feedback; re-scoring the head before each pick keeps
        # the choice current at O(depth) cost instead of re-scoring every candidate.
        head = [self.evidence.get(user) for user, _ in self._frontiers[0].top(self.method.depth)]
        self.rescore(head)


def log_order(timestamp_ms: int | None, partition: int, offset: int) -> int:
    """A post's arrival order from its place in the Kafka log: record time (ms), then partition and
    offset, packed in a signed 64-bit int (partitions modulo 64, offsets modulo 16384 within a ms)."""
    ts = timestamp_ms if timestamp_ms is not None and timestamp_ms >= 0 else 0
    return (int(ts) << 20) | ((partition % 64) << 14) | (offset % 16384)


class ChooserStage:
    """The stream chooser's decisions over Kafka records, as a :class:`focuscrawl.topics.changelog.StatefulHandler`.

    Inputs (all keyed by user, co-partitioned): posts (``Post`` JSON) fold into evidence, verdicts
    (``StatsEvent`` JSON of this ``method``) free an in-flight slot and feed adaptive methods, pushed
    scores (``{"score": s}``, compacted topic; seed section V, pseudo-training) re-rank waiting
    candidates. Each input is read as its typed record (``Post``, ``StatsEvent``, ``Priority``), so a
    malformed one raises :class:`~focuscrawl.core.records.RecordError` for the runner to skip and count.
    When idle it keeps ``lead`` chosen users in flight, one extract request each.
    It chooses only once its input is read to the end (or ``catch_up_wait`` seconds passed since it
    last was), so a chooser behind its input (a restart, a burst) picks from all the evidence there
    is, as an uninterrupted one would. State goes out as :class:`UserState` changelog records, a
    candidate's with the latest push that scored it (``pushed``), so a stage restored from them names
    in its extract requests the push an uninterrupted one would. ``champion``: the
    :class:`~focuscrawl.fue.champion.ChampionFollower` of the method's classifier; a new version is taken between
    two batches and every waiting candidate rescored by it, the new scores going to the changelog with that batch.
    """

    def __init__(self, chooser: UserChooser, *, method: str, posts_topic: str, stats_topic: str,
                 scores_topic: str, extract_topic: str, lead: int = 8, catch_up_wait: float = 5.0,
                 clock=None, on_score_applied=None, champion=None) -> None:
        import time

        self.chooser, self.method, self.lead, self.champion = chooser, method, lead, champion
        self.on_score_applied = on_score_applied  # (record) after a pushed score is applied: its timing
        self.posts_topic, self.stats_topic, self.scores_topic = posts_topic, stats_topic, scores_topic
        self.extract_topic, self.catch_up_wait = extract_topic, catch_up_wait
        self.clock = clock or time.monotonic
        self._last_caught_up = self.clock()
        self.users_of: dict[int, set[str]] = {}
        self.counts = {"chosen": 0, "scores_applied": 0, "posts": 0, "verdicts": 0, "restored": 0, "rescored": 0}
        self.pushed: dict[str, Decision] = {}  # waiting user -> the latest push that scored it (model, version, rank)

    # -- StatefulHandler -------------------------------------------------------------------------

    def assigned(self, partitions: list[int], state: dict[bytes, tuple[int, bytes]]) -> None:
        states = []
        for key, (partition, value) in state.items():
            st = UserState.from_json(value)
            self.users_of.setdefault(partition, set()).add(st.user)
            states.append(st)
            if st.status == "candidate" and st.pushed is not None:
                self.pushed[st.user] = st.pushed
        self.counts["restored"] += self.chooser.restore(states)

    def revoked(self, partitions: list[int]) -> None:
        for p in partitions:
            users = self.users_of.pop(p, set())
            self.chooser.drop(users)
            for user in users:
                self.pushed.pop(user, None)

    def handle(self, record) -> tuple:
        from focuscrawl.fue.pipeline import post_from_json
        from focuscrawl.topics.priority import Priority

        if record.topic == self.posts_topic:
            post = post_from_json(record.value)
            self.users_of.setdefault(record.partition, set()).add(post.author)
            self.chooser.add_posts([post], order=log_order(getattr(record, "timestamp", None), record.partition,
                                                          record.offset))
            self.counts["posts"] += 1
        elif record.topic == self.stats_topic:
            verdict = StatsEvent.from_json(record.value)
            if verdict.method == self.method and self.chooser.waits_for(verdict.user):
                self.chooser.feedback(verdict.user, verdict.relevant)
                self.counts["verdicts"] += 1
        elif record.topic == self.scores_topic and record.key is not None and record.value is not None:
            user, row = record.key.decode(), Priority.from_json(record.value).row()
            if self.chooser.set_scores([(user, row["score"])]):
                self.counts["scores_applied"] += 1
                self.pushed[user] = Decision.of_push("fue", self.method, row)
            if self.on_score_applied is not None:
                self.on_score_applied(record)
        return ()

    def idle(self, caught_up: bool) -> list[tuple[str, str, bytes]]:
        classifier = self.champion.take() if self.champion is not None else None
        if classifier is not None:
            self.counts["rescored"] += self.chooser.set_classifier(classifier)
        now = self.clock()
        if caught_up:
            self._last_caught_up = now
        elif now - self._last_caught_up < self.catch_up_wait:
            return []
        out = []
        while self.chooser.in_flight < self.lead:
            user = self.chooser.choose()
            if user is None:
                break
            self.counts["chosen"] += 1
            out.append((self.extract_topic, user,
                        ExtractRequest(user=user, method=self.method, chosen=self._decision(user)).to_json()))
        return out

    def _decision(self, user: str) -> Decision:
        """What chose ``user``: its latest push while the score it was chosen at is still that push's (the
        chooser rescores a user as new posts arrive); else the method's own score, no model pushed. A push
        applied before a restart is known again from the user's changelog state (:meth:`changes`), as the scores
        topic is read on from the group's offsets."""
        pushed, score = self.pushed.pop(user, None), self.chooser.chosen_score_
        if pushed is not None and pushed.score == score:
            return pushed
        return Decision("fue", self.method, score=score)

    def changes(self) -> list[tuple[str, bytes]]:
        """The chooser's changed states, a candidate's with the push that last scored it (``pushed``)."""
        out = []
        for st in self.chooser.changes():
            if st.status == "candidate" and st.user in self.pushed:
                st = replace(st, pushed=self.pushed[st.user])
            out.append((st.user, st.to_json()))
        return out

    def status(self, top: int = 5) -> dict:
        return {"method": self.method, "candidates": len(self.chooser), "processed": len(self.chooser.processed),
                "in_flight": sorted(self.chooser.awaiting), **self.counts, "top": self.chooser.top(top),
                **(self.champion.status() if self.champion is not None else {})}
