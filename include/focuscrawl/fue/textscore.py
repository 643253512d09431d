"""HCP's probability kept up to date post by post, instead of re-vectorising each user's whole text.

Seed 000 (*Real-time focused extraction of social media users*) section IV-E (HCP, eq. 6) ranks a candidate by the probability
the classifier of section IV-F (TF-IDF, then L1 logistic regression) gives "the text seen so far":
the concatenation of every title and body of the user seen in listings (section III, User
Updater). Re-vectorising that text on every post costs its whole length, up to
``EvidenceAggregator.max_text_chars`` (20,000 characters), per post. The same probability follows
from per-user term counts and two running sums:

    x = c * idf / ||c * idf||,  decision = b + w . x = b + (sum_j c_j idf_j w_j) / sqrt(sum_j (c_j idf_j)^2)

with ``c`` the user's counts of the model's vocabulary terms, ``idf`` the vectoriser's, ``w`` and
``b`` the regression's. A new post with ``k`` tokens of term ``j`` adds ``dot += k idf_j w_j`` and
``sq += ((c_j + k)^2 - c_j^2) idf_j^2`` per term of the post; text leaving the bounded window takes
them off again. The cost of a post is its own length. The scores equal the classifier's own
``predict_proba`` of the joined text within float rounding (``tests/fue/test_incremental_text.py``,
on real posts), because the word analyser is local: the text is joined with newlines, and no
token (``\\b\\w\\w+\\b``, unigrams) spans a newline, so the counts of the joined text are the sums of
the counts of its parts.

Two pieces, both listeners of an :class:`~focuscrawl.fue.evidence.EvidenceAggregator`
(``added``/``removed``/``dropped``):

- :class:`UserTerms` keeps each user's counts of *tokens*, which no vocabulary changes: a post is
  tokenised once however many models follow it. Pseudo-training (section V) swaps a model every
  5 simulated minutes; the new model's scorer maps each held user's distinct tokens once
  (:meth:`IncrementalTextScorer.follow_held`) instead of tokenising every held part again, which was
  58 % of a FUE week (DEVELOPERS.md).
- :class:`IncrementalTextScorer` wraps one fitted classifier (``UserClassifier``, or anything with
  its ``vectorizer_``/``model_``, such as ``SharedScores``) and keeps only each user's two sums,
  reading the counts from its ``UserTerms`` (its own, or one shared by a chooser's models).

HCP and its variants call :meth:`IncrementalTextScorer.predict_proba_evidence` when their
classifier has it (``focuscrawl.fue.methods``); evidence it does not follow (another user's text,
a snapshot of a chosen user) is re-vectorised as before. :meth:`IncrementalTextScorer.supports`
says which classifiers it can mirror: a word analyser of unigrams with the default token pattern,
raw term frequencies, l2 norm, and a binary ``LogisticRegression``.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from typing import Callable, Sequence

import numpy as np

from focuscrawl.fue.evidence import UserEvidence

DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
FAST_TOKEN_PATTERN = r"(?u)\w\w+"
EXACT_EVERY = 4096  # token changes after which a user's sums are recomputed from its counts (rounding)


def tokeniser_key(vectorizer) -> tuple:
    """What a vectoriser's tokens depend on, given :meth:`IncrementalTextScorer.supports`: models
    with the same key can share one :class:`UserTerms` (stop words are each model's to drop)."""
    return (bool(vectorizer.lowercase), vectorizer.strip_accents)


class _Held:
    __slots__ = ("counts", "chars", "parts")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}  # token -> count in the user's text
        self.chars = 0                    # length of the joined text (parts and newlines)
        self.parts = 0


class UserTerms:
    """Each user's token counts over its bounded text, the same for every vocabulary.

    An aggregator listener; the part it was told last (:meth:`told`) is what the scorers sharing it
    fold next, so it must listen before them (``UserChooser`` registers it first).
    """

    def __init__(self, vectorizer) -> None:
        self.key = tokeniser_key(vectorizer)
        lowercase, strip_accents = self.key
        if strip_accents is None:
            # Where the default pattern matches, findall of \w\w+ finds the same tokens (a run of word
            # characters is matched whole from its start, so both ends are boundaries), a third faster.
            pattern = re.compile(FAST_TOKEN_PATTERN)
            self.tokens: Callable[[str], list[str]] = ((lambda text: pattern.findall(text.lower())) if lowercase
                                                       else pattern.findall)
        else:
            preprocess, tokenize = vectorizer.build_preprocessor(), vectorizer.build_tokenizer()
            self.tokens = lambda text: tokenize(preprocess(text))
        self._users: dict[str, _Held] = {}
        self._last: tuple[str, str, Counter | None] | None = None

    def __len__(self) -> int:
        return len(self._users)

    def items(self):
        """(user, its token counts) of every held user."""
        return ((user, held.counts) for user, held in self._users.items())

    def counts(self, user: str) -> dict[str, int]:
        held = self._users.get(user)
        return {} if held is None else held.counts

    def chars(self, user: str) -> int:
        held = self._users.get(user)
        return 0 if held is None else held.chars

    def added(self, user: str, text: str) -> None:
        """``text`` joined the end of ``user``'s text (after a newline if it had text)."""
        held = self._users.get(user)
        if held is None:
            held = self._users[user] = _Held()
        part = Counter(self.tokens(text))
        counts = held.counts
        for token, k in part.items():
            if token in counts:
                counts[token] += k
            else:
                # Every user's counts hold the one interned copy of a token: each findall match is a string of
                # its own, and held per user per chooser they made a week's FUE fold 5.3 GB.
                counts[sys.intern(token)] = k
        held.chars += len(text) + (1 if held.parts else 0)
        held.parts += 1
        self._last = (user, text, part)

    def removed(self, user: str, text: str) -> None:
        """``text`` (the oldest part) left ``user``'s text window."""
        held = self._users.get(user)
        if held is None or not held.parts:
            self._last = (user, text, None)
            return
        part = Counter(self.tokens(text))
        counts = held.counts
        for token, k in part.items():
            left = counts.get(token, 0) - k
            if left > 0:
                counts[token] = left
            else:
                counts.pop(token, None)
        held.parts -= 1
        held.chars = max(held.chars - len(text) - (1 if held.parts else 0), 0)
        self._last = (user, text, part)

    def dropped(self, user: str) -> None:
        """``user`` left the aggregator (extracted, or its partition moved)."""
        self._users.pop(user, None)
        self._last = None

    def told(self, user: str, text: str) -> Counter | None:
        """The token counts of the part just added or removed (None: nothing changed)."""
        last = self._last
        if last is None or last[0] != user or last[1] != text:
            raise RuntimeError(f"a scorer was told of {user!r}'s text before the UserTerms it reads: "
                               "register the UserTerms with the aggregator first")
        return last[2]


class IncrementalTextScorer:
    """P(on-target | text seen so far) of every followed user, updated by each text added or removed."""

    def __init__(self, classifier, terms: UserTerms | None = None) -> None:
        why = self.unsupported(classifier)
        if why:
            raise ValueError(f"cannot follow this classifier's scores incrementally: {why}")
        self.classifier = classifier
        vectorizer, model = classifier.vectorizer_, classifier.model_
        if terms is not None and terms.key != tokeniser_key(vectorizer):
            raise ValueError(f"this classifier tokenises as {tokeniser_key(vectorizer)}, the shared UserTerms as "
                             f"{terms.key}: give it a UserTerms of its own")
        self._own_terms = terms is None  # a scorer on its own tells its private UserTerms first
        self.terms = UserTerms(vectorizer) if terms is None else terms
        stop = set(vectorizer.get_stop_words() or ()) & vectorizer.vocabulary_.keys()
        # The analyser drops stop words before the vocabulary lookup; unigrams only, so dropping them from it is the same.
        self._column = ({t: j for t, j in vectorizer.vocabulary_.items() if t not in stop} if stop
                        else vectorizer.vocabulary_)
        idf = np.asarray(vectorizer.idf_, dtype=float)
        self._w = (idf * np.asarray(model.coef_, dtype=float).ravel()).tolist()
        self._q = (idf * idf).tolist()
        self._b = float(np.asarray(model.intercept_, dtype=float).ravel()[0])
        self._sums: dict[str, list] = {}  # user -> [dot, sq, token changes since exact, vocabulary tokens held]
        self.followed = 0    # evidences scored from the running sums
        self.revectorised = 0  # evidences the scorer did not follow, scored by the classifier

    @staticmethod
    def unsupported(classifier) -> str | None:
        """Why ``classifier``'s scores cannot be followed incrementally (None: they can)."""
        vectorizer = getattr(classifier, "vectorizer_", None)
        model = getattr(classifier, "model_", None)
        if vectorizer is None or model is None or not hasattr(vectorizer, "idf_"):
            return "no fitted TF-IDF vectoriser (vectorizer_) and model (model_)"
        checks = {
            "analyzer": vectorizer.analyzer == "word", "ngram_range": tuple(vectorizer.ngram_range) == (1, 1),
            "token_pattern": vectorizer.token_pattern == DEFAULT_TOKEN_PATTERN and vectorizer.tokenizer is None,
            "preprocessor": vectorizer.preprocessor is None, "binary": not vectorizer.binary,
            "norm": vectorizer.norm == "l2", "use_idf": bool(vectorizer.use_idf),
            "sublinear_tf": not vectorizer.sublinear_tf,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            return f"vectoriser settings {', '.join(bad)} are not the additive default"
        if type(model).__name__ != "LogisticRegression" or np.asarray(model.coef_).shape[0] != 1:
            return f"model {type(model).__name__} is not a binary LogisticRegression"
        return None

    @classmethod
    def supports(cls, classifier) -> bool:
        return cls.unsupported(classifier) is None

    def __getattr__(self, name: str):
        # Everything else (predict_proba, proba, threshold, save, ...) is the wrapped classifier's.
        if name == "classifier":
            raise AttributeError(name)
        return getattr(self.classifier, name)

    def __len__(self) -> int:
        return len(self._sums)

    def follow_held(self) -> None:
        """Take up every user its UserTerms holds now: each user's distinct tokens mapped once."""
        for user, _ in self.terms.items():
            self._exact(user, self._sums.setdefault(user, [0.0, 0.0, 0, 0]))

    # -- the aggregator's events (EvidenceAggregator.watch_texts) ---------------------------------

    def added(self, user: str, text: str) -> None:
        """``text`` joined the end of ``user``'s text (after a newline if it had text)."""
        if self._own_terms:
            self.terms.added(user, text)
        self._fold(user, self.terms.told(user, text), +1)

    def removed(self, user: str, text: str) -> None:
        """``text`` (the oldest part) left ``user``'s text window."""
        if self._own_terms:
            self.terms.removed(user, text)
        part = self.terms.told(user, text)
        if part is not None:
            self._fold(user, part, -1)

    def dropped(self, user: str) -> None:
        """``user`` left the aggregator (extracted, or its partition moved)."""
        if self._own_terms:
            self.terms.dropped(user)
        self._sums.pop(user, None)

    # -- scores ----------------------------------------------------------------------------------

    def decision(self, user: str) -> float:
        """The regression's decision value for ``user``'s followed text (the intercept for none)."""
        st = self._sums.get(user)
        if st is None or st[1] <= 0.0:
            return self._b
        return self._b + st[0] / math.sqrt(st[1])

    def follows(self, evidence: UserEvidence) -> bool:
        """Whether ``evidence`` is the text this scorer follows for its user (same length)."""
        return self.terms.chars(evidence.user) == len(evidence.text)

    def predict_proba_evidence(self, evidences: Sequence[UserEvidence]) -> np.ndarray:
        """P(on-target) of each evidence's text: from the running sums where followed, else re-vectorised."""
        out = np.empty(len(evidences))
        other: list[int] = []
        for i, ev in enumerate(evidences):
            if self.follows(ev):
                out[i] = _expit(self.decision(ev.user))  # what LogisticRegression.predict_proba applies
            else:
                other.append(i)
        if other:
            out[other] = self.classifier.predict_proba([evidences[i].text for i in other])
        self.followed += len(evidences) - len(other)
        self.revectorised += len(other)
        return out

    # -- internals -------------------------------------------------------------------------------

    def _fold(self, user: str, part: Counter, sign: int) -> None:
        """Fold a part's tokens in (+1) or out (-1); the UserTerms' counts already include the change."""
        st = self._sums.get(user)
        if st is None:
            st = self._sums[user] = [0.0, 0.0, 0, 0]
        counts, get, w, q = self.terms.counts(user), self._column.get, self._w, self._q
        dot = sq = 0.0
        changes = 0
        for token, k in part.items():
            j = get(token)
            if j is None:
                continue
            after = counts.get(token, 0)
            before = after - sign * k
            dot += sign * k * w[j]
            sq += (after * after - before * before) * q[j]
            changes += k
        st[3] += sign * changes
        if st[3] <= 0:
            st[0] = st[1] = 0.0  # no vocabulary term left: exactly zero, whatever the rounding
            st[2] = st[3] = 0
            return
        st[0] += dot
        st[1] += sq
        st[2] += changes
        if st[2] >= EXACT_EVERY:
            self._exact(user, st)

    def _exact(self, user: str, st: list) -> None:
        """A user's sums from its counts: on taking a user up, and so rounding cannot build up over a long stream."""
        get, w, q = self._column.get, self._w, self._q
        terms = [(j, c) for j, c in ((get(t), c) for t, c in self.terms.counts(user).items()) if j is not None]
        st[0] = math.fsum(c * w[j] for j, c in terms)
        st[1] = math.fsum(c * c * q[j] for j, c in terms)
        st[2] = 0
        st[3] = sum(c for _, c in terms)


def _expit(d: float) -> float:
    if d >= 0.0:
        return 1.0 / (1.0 + math.exp(-d))
    e = math.exp(d)
    return e / (1.0 + e)
