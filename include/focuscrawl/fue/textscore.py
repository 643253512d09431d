"""HCP's probability kept up to date post by post, instead of re-vectorising each user's whole text.

Seed ``000_c12b299f5bad9cdf.txt`` section IV-E (HCP, eq. 6) ranks a candidate by the probability
the classifier of section IV-F (TF-IDF, then L1 logistic regression) gives "the text seen so far":
the concatenation of every title and body of the user seen in listings (section III, User
Updater). Re-vectorising that text on every post costs its whole length, up to
``EvidenceAggregator.max_text_chars`` (20,000 characters), per post. The same probability follows
from per-user term counts and two running sums:

    x = c * idf / ||c * idf||,  decision = b + w . x = b + (sum_j c_j idf_j w_j) / sqrt(sum_j (c_j idf_j)^2)

with ``c`` the user's counts of the model's vocabulary terms, ``idf`` the vectoriser's, ``w`` and
``b`` the regression's. A new post with ``k`` tokens of term ``j`` adds ``dot += k idf_j w_j`` and
``sq += (2 c_j + k) k idf_j^2`` per term of the post, before ``c_j += k``; text leaving the bounded window takes
them off again (each part's columns are kept, so a part leaving is not analysed again). The
cost of a post is its own length. The scores equal the classifier's own
``predict_proba`` of the joined text within float rounding (``tests/fue/test_incremental_text.py``,
on real posts), because the word analyser is local: the text is joined with newlines, and no
token (``\\b\\w\\w+\\b``, unigrams) spans a newline, so the counts of the joined text are the sums of
the counts of its parts.

:class:`IncrementalTextScorer` wraps one fitted classifier (``UserClassifier``, or anything with
its ``vectorizer_``/``model_``, such as ``SharedScores``) and listens to an
:class:`~focuscrawl.fue.evidence.EvidenceAggregator` (``added``/``removed``/``dropped``). HCP and
its variants call :meth:`predict_proba_evidence` when their classifier has it
(``focuscrawl.fue.methods``); evidence it does not follow (another user's text, a snapshot of a
chosen user) is re-vectorised as before. :meth:`supports` says which classifiers it can mirror:
a word analyser of unigrams with the default token pattern, raw term frequencies, l2 norm, and a
binary ``LogisticRegression``.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter, deque
from typing import Sequence

import numpy as np

from focuscrawl.fue.evidence import UserEvidence

DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
FAST_TOKEN_PATTERN = r"(?u)\w\w+"
EXACT_EVERY = 4096  # token changes after which a user's sums are recomputed from its counts (rounding)


class _UserText:
    __slots__ = ("counts", "dot", "sq", "chars", "parts", "changes")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}  # vocabulary column -> count in the user's text
        self.dot = 0.0                    # sum_j c_j idf_j w_j
        self.sq = 0.0                     # sum_j (c_j idf_j)^2
        self.chars = 0                    # length of the joined text (parts and newlines)
        self.parts: deque[tuple[int, array]] = deque()  # per part, oldest first: its length, its columns
        self.changes = 0


class IncrementalTextScorer:
    """P(on-target | text seen so far) of every followed user, updated by each text added or removed."""

    def __init__(self, classifier) -> None:
        why = self.unsupported(classifier)
        if why:
            raise ValueError(f"cannot follow this classifier's scores incrementally: {why}")
        self.classifier = classifier
        vectorizer, model = classifier.vectorizer_, classifier.model_
        self._analyze = vectorizer.build_analyzer()
        self._column = vectorizer.vocabulary_
        self._tokens = None  # the analyser without its stop-word filter, when that filter drops nothing we keep
        stop = vectorizer.get_stop_words() or ()
        if vectorizer.strip_accents is None and not any(word in self._column for word in stop):
            # Where the default pattern matches, findall of \w\w+ finds the same tokens (a run of word
            # characters is matched whole from its start, so both ends are boundaries), a third faster.
            pattern = re.compile(FAST_TOKEN_PATTERN if vectorizer.token_pattern == DEFAULT_TOKEN_PATTERN
                                 else vectorizer.token_pattern)
            lower = vectorizer.lowercase
            self._tokens = (lambda text: pattern.findall(text.lower())) if lower else pattern.findall
        idf = np.asarray(vectorizer.idf_, dtype=float)
        self._w = (idf * np.asarray(model.coef_, dtype=float).ravel()).tolist()
        self._q = (idf * idf).tolist()
        self._b = float(np.asarray(model.intercept_, dtype=float).ravel()[0])
        self._users: dict[str, _UserText] = {}
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
        return len(self._users)

    # -- the aggregator's events (EvidenceAggregator.watch_texts) ---------------------------------

    def added(self, user: str, text: str) -> None:
        """``text`` joined the end of ``user``'s text (after a newline if it had text)."""
        st = self._users.get(user)
        if st is None:
            st = self._users[user] = _UserText()
        columns = self._columns(text)
        self._fold(st, columns, +1)
        st.chars += len(text) + (1 if st.parts else 0)
        st.parts.append((len(text), columns))

    def removed(self, user: str, text: str) -> None:
        """``text`` (the oldest part) left ``user``'s text window."""
        st = self._users.get(user)
        if st is None or not st.parts:
            return
        length, columns = st.parts.popleft()
        if length != len(text):  # not the part we were told first: analyse what we are told now
            columns = self._columns(text)
        self._fold(st, columns, -1)
        st.chars = max(st.chars - len(text) - (1 if st.parts else 0), 0)
        if not st.counts:
            st.dot = st.sq = 0.0  # nothing left: exactly zero, whatever the rounding

    def dropped(self, user: str) -> None:
        """``user`` left the aggregator (extracted, or its partition moved)."""
        self._users.pop(user, None)

    # -- scores ----------------------------------------------------------------------------------

    def decision(self, user: str) -> float:
        """The regression's decision value for ``user``'s followed text (the intercept for none)."""
        st = self._users.get(user)
        if st is None or st.sq <= 0.0:
            return self._b
        return self._b + st.dot / math.sqrt(st.sq)

    def follows(self, evidence: UserEvidence) -> bool:
        """Whether ``evidence`` is the text this scorer follows for its user (same length)."""
        st = self._users.get(evidence.user)
        return len(evidence.text) == 0 if st is None else st.chars == len(evidence.text)

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

    def _columns(self, text: str) -> array:
        """The vocabulary columns of ``text``'s tokens (terms outside the vocabulary dropped)."""
        get = self._column.get
        tokens = self._tokens(text) if self._tokens is not None else self._analyze(text)
        return array("i", [j for j in map(get, tokens) if j is not None])

    def _fold(self, st: _UserText, columns: array, sign: int) -> None:
        counts, w, q = st.counts, self._w, self._q
        dot = sq = 0.0
        for j, k in Counter(columns).items():
            c = counts.get(j, 0)
            if sign > 0:
                counts[j] = c + k
                dot += k * w[j]
                sq += (2 * c + k) * k * q[j]       # (c + k)^2 - c^2
            else:
                if c <= k:
                    counts.pop(j, None)
                else:
                    counts[j] = c - k
                dot -= k * w[j]
                sq -= (2 * c - k) * k * q[j]       # c^2 - (c - k)^2
        st.dot += dot
        st.sq += sq
        st.changes += len(columns)
        if st.changes >= EXACT_EVERY:
            self._exact(st)

    def _exact(self, st: _UserText) -> None:
        """Recompute a user's sums from its counts, so rounding cannot build up over a long stream."""
        w, q = self._w, self._q
        st.dot = math.fsum(c * w[j] for j, c in st.counts.items())
        st.sq = math.fsum(c * c * q[j] for j, c in st.counts.items())
        st.changes = 0


def _expit(d: float) -> float:
    if d >= 0.0:
        return 1.0 / (1.0 + math.exp(-d))
    e = math.exp(d)
    return e / (1.0 + e)
