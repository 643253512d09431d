"""The user classifier: TF-IDF features and L1-regularised logistic regression.

Seed 000 (*Real-time focused extraction of social media users*) section IV-F: "a Logistic Regression model with L1
regularisation implemented in Python with scikit-learn ... built with a training set of 486
users ... represented with a single document consisting of the concatenation of all their
writings", and "a threshold equal to 0.9" to call a user on-target. The hyper-parameters
default to those of the paper's published trainer (blind-sniper/heuristics
``model_trainer.py``): word counts with ``min_df=20`` and English stop words, TF-IDF, liblinear
L1 with ``C=16`` and class weights ``w/(1+w)`` for positives with ``w=4``
(:class:`focuscrawl.fue.params.FueParams` holds them and the threshold).

Two roles (section V, "HCP with pseudo-training"):
- the *reference* (evaluation) classifier judges an extracted user's full history;
- the *prediction* classifier scores the little text seen in listings for HCP/LCP.
In the paper "these two classifiers are the same": HCP, LCP, fusion, hierarchical and the
pseudo-trained variants start from the reference model (and pseudo-training refits on the
original whole-user set plus pseudo-examples). ``train_candidate_classifier`` (on snippets
built by ``short_evidence_corpus``) is ours, used only by HCP-SNIP.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from focuscrawl.core.corpora import EriskCorpus, writing_body
from focuscrawl.fue.params import DEFAULT


class UserClassifier:
    """P(user is on-target | text). ``fit`` returns self; learned state ends in ``_``."""

    def __init__(
        self,
        *,
        C: float = DEFAULT.C,
        positive_weight: float = DEFAULT.positive_weight,
        min_df: int | float = DEFAULT.min_df,
        stop_words: str | None = "english",
        threshold: float = DEFAULT.reference_threshold,
    ) -> None:
        self.C = C
        self.positive_weight = positive_weight
        self.min_df = min_df
        self.stop_words = stop_words
        self.threshold = threshold

    def fit(self, documents: Sequence[str], labels: Sequence[int]) -> "UserClassifier":
        from sklearn.feature_extraction.text import TfidfVectorizer

        self._check_labels(labels)
        self.vectorizer_ = TfidfVectorizer(min_df=self.min_df, stop_words=self.stop_words)
        return self._fit_model(self.vectorizer_.fit_transform(documents), labels)

    def fit_counts(self, counts: "TermCounts", labels: Sequence[int], rows: Sequence[int] | None = None
                   ) -> "UserClassifier":
        """``fit`` on the documents already analysed in ``counts`` (those of ``rows`` only, when given): the same
        vocabulary, idf and model as ``fit`` on those documents.

        The vocabulary is pruned by ``min_df`` and sorted as ``TfidfVectorizer`` does, so the
        features (and their order, which liblinear's coordinate descent follows) are identical; a term of
        no document in ``rows`` is in none, so it is pruned whatever ``min_df``.
        """
        from sklearn.feature_extraction.text import TfidfTransformer, TfidfVectorizer

        if counts.stop_words != self.stop_words:
            raise ValueError(f"counts were analysed with stop_words={counts.stop_words!r}, not {self.stop_words!r}")
        self._check_labels(labels)
        x = counts.matrix(rows)
        if x.shape[0] != len(labels):
            raise ValueError(f"{x.shape[0]} counted documents but {len(labels)} labels")
        min_count = self.min_df if isinstance(self.min_df, int) else self.min_df * x.shape[0]
        df = np.bincount(x.indices, minlength=x.shape[1])
        terms = counts.terms()
        kept = sorted((terms[j], j) for j in np.flatnonzero(df >= min_count))
        if not kept:
            raise ValueError(f"no term is in {min_count} documents or more; lower min_df")
        x = x[:, [j for _, j in kept]]
        x.sort_indices()
        self.vectorizer_ = TfidfVectorizer(min_df=self.min_df, stop_words=self.stop_words)
        self.vectorizer_.vocabulary_ = {term: i for i, (term, _) in enumerate(kept)}
        self.vectorizer_.fixed_vocabulary_ = False
        self.vectorizer_._tfidf = TfidfTransformer().fit(x)  # TfidfVectorizer's own defaults
        return self._fit_model(self.vectorizer_._tfidf.transform(x, copy=False), labels)

    @staticmethod
    def _check_labels(labels: Sequence[int]) -> None:
        if set(np.unique(np.asarray(labels, dtype=int))) != {0, 1}:
            raise ValueError("training needs both positive (1) and negative (0) users")

    def _fit_model(self, x, labels: Sequence[int]) -> "UserClassifier":
        from sklearn.linear_model import LogisticRegression

        w = self.positive_weight
        # liblinear visits coordinates in a random order; a fixed seed makes verdicts near 0.9 repeatable.
        self.model_ = LogisticRegression(
            penalty="l1", solver="liblinear", C=self.C, class_weight={0: 1.0 / (1.0 + w), 1: w / (1.0 + w)},
            random_state=0,
        ).fit(x, np.asarray(labels, dtype=int))
        return self

    def predict_proba(self, texts: Iterable[str]) -> np.ndarray:
        """P(on-target) for each text, as a float array."""
        x = self.vectorizer_.transform(list(texts))
        return self.model_.predict_proba(x)[:, 1]

    def predict_proba_counts(self, counts: "TermCounts", texts: Sequence[str]) -> np.ndarray:
        """``predict_proba`` with the texts analysed (and remembered) by ``counts``.

        For re-scoring the same waiting candidates with every new model: a candidate's text is
        tokenised once, not once per model.
        """
        return self.predict_proba_counted(counts, counts.rows(texts))

    def predict_proba_counted(self, counts: "TermCounts", x) -> np.ndarray:
        """``predict_proba`` of documents ``counts`` analysed into the counts ``x`` (its columns)."""
        if counts.stop_words != self.stop_words:
            raise ValueError(f"counts were analysed with stop_words={counts.stop_words!r}, not {self.stop_words!r}")
        x = counts.project(x, self.vectorizer_.vocabulary_)
        return self.model_.predict_proba(self.vectorizer_._tfidf.transform(x, copy=False))[:, 1]

    def proba(self, text: str) -> float:
        return float(self.predict_proba([text])[0])

    def is_relevant(self, text: str) -> bool:
        """The seed's relevance judgement: probability above the threshold (0.9)."""
        return self.proba(text) > self.threshold

    def save(self, path: str | Path) -> Path:
        import joblib

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        joblib.dump(self, path)
        return path

    @staticmethod
    def load(path: str | Path) -> "UserClassifier":
        import joblib

        model = joblib.load(Path(path))
        if not isinstance(model, UserClassifier):
            raise TypeError(f"{path} holds a {type(model).__name__}, not a UserClassifier")
        return model


class SharedScores:
    """One classifier shared by several methods, scoring each distinct text once.

    In the experiment every method sees the same listings, so HCP, LCP, fusion, hierarchical and
    the not-yet-retrained pseudo variants ask the reference model for the same evidence texts in
    the same step; the memo answers all but the first. It holds at most ``max_texts`` texts and
    is emptied when full. Thread-safe enough: a race only computes a probability twice.
    """

    def __init__(self, classifier: UserClassifier, max_texts: int = 20_000) -> None:
        self.classifier = classifier
        self.max_texts = max_texts
        self._memo: dict[str, float] = {}

    def __getattr__(self, name: str):
        return getattr(self.classifier, name)

    def predict_proba(self, texts: Iterable[str]) -> np.ndarray:
        texts = list(texts)
        memo = self._memo
        todo = list(dict.fromkeys(t for t in texts if t not in memo))
        if todo:
            if len(memo) + len(todo) > self.max_texts:
                # Full: start a new memo with every text of this call (not only the unknown ones).
                memo, todo = {}, list(dict.fromkeys(texts))
            memo.update(zip(todo, self.classifier.predict_proba(todo).tolist()))
            self._memo = memo
        return np.fromiter((memo[t] for t in texts), dtype=float, count=len(texts))

    def proba(self, text: str) -> float:
        return float(self.predict_proba([text])[0])


def short_evidence_corpus(
    histories: Sequence[Sequence[str]],
    labels: Sequence[int],
    *,
    writings_per_sample: int = 2,
    samples_per_user: int = 20,
    seed: int = 0,
) -> tuple[list[str], list[int]]:
    """Snippets of a few consecutive writings per user, labelled with the user's label.

    Trains a candidate classifier on the kind of evidence it scores (one or two posts seen in
    a listing) rather than on whole histories.
    """
    rng = random.Random(seed)
    docs: list[str] = []
    ys: list[int] = []
    for writings, label in zip(histories, labels):
        writings = [w for w in writings if w.strip()]
        if not writings:
            continue
        for _ in range(min(samples_per_user, len(writings))):
            start = rng.randrange(len(writings))
            docs.append("\n".join(writings[start:start + writings_per_sample]))
            ys.append(int(label))
    return docs, ys


def corpus_histories(corpus, max_donors: dict[bool, int] | None = None) -> tuple[list[list[str]], list[int]]:
    """Per-donor writings (``title\\ntext``) and labels of any corpus (``focuscrawl.core.corpora``: eRisk or generated).

    ``max_donors`` caps donors per class (e.g. the paper's 83 positive / 403 negative users).
    """
    histories, labels = [], []
    for label in (True, False):
        n = corpus.donors(label)
        if max_donors is not None:
            n = min(n, max_donors[label])
        for donor in range(n):
            writings = (corpus.writing(label, donor, j) for j in range(corpus.size(label, donor)))
            histories.append([writing_body(title, text) for title, text, _ in writings])
            labels.append(int(label))
    return histories, labels


def erisk_histories(source: str | Path, cache_dir: str | Path) -> tuple[list[list[str]], list[int]]:
    """Per-user lists of writings and labels from an eRisk collection.

    Reads through the cached eRisk loader of ``focuscrawl.core.corpora`` (one parser for the project).
    """
    return corpus_histories(EriskCorpus.load(Path(source), Path(cache_dir)))


def reference_params(users: int) -> dict:
    """The reference classifier's hyper-parameters for a training set of ``users`` documents.

    The paper's ``min_df=20`` assumes its 486 users; a smaller set keeps words seen by 5% of users.
    """
    return {"min_df": min(DEFAULT.min_df, max(2, users // 20))}


def whole_user_documents(histories: Sequence[Sequence[str]]) -> list[str]:
    """One document per user, the concatenation of all its writings (section IV-F)."""
    return ["\n".join(h) for h in histories]


def train_reference_classifier(histories: Sequence[Sequence[str]], labels: Sequence[int], **params) -> UserClassifier:
    """The seed's reference classifier: one document per user, the paper's hyper-parameters."""
    return UserClassifier(**params).fit(whole_user_documents(histories), labels)


def train_candidate_classifier(
    histories: Sequence[Sequence[str]], labels: Sequence[int], *, seed: int = 0, **params
) -> UserClassifier:
    """HCP-SNIP's prediction classifier (ours), fitted on short snippets (``short_evidence_corpus``).

    Snippets are many and short, so words are kept from 5 snippets up (``min_df``) by default.
    """
    docs, ys = short_evidence_corpus(histories, labels, seed=seed)
    return UserClassifier(**{"min_df": 5, **params}).fit(docs, ys)


class TermCounts:
    """Documents analysed once into term counts, for refitting and re-scoring without re-tokenising.

    Seed section V retrains the candidate classifier every five minutes on the original set plus
    every extracted user so far, and re-scores the waiting candidates. Tokenising is most of a
    TF-IDF fit, and re-tokenising the same growing set at every retrain made a week's run
    quadratic; here a training document is analysed when it is ``add``-ed and a candidate's text
    when it is first scored (``rows`` remembers the texts of its previous call only, so memory
    follows the candidate set). Columns are a growing vocabulary of every term seen;
    ``UserClassifier.fit_counts`` prunes and sorts them as ``TfidfVectorizer`` would.
    """

    def __init__(self, stop_words: str | None = "english") -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.stop_words = stop_words
        self._analyze = TfidfVectorizer(stop_words=stop_words).build_analyzer()
        self._vocabulary: dict[str, int] = {}
        self._documents: list[tuple[np.ndarray, np.ndarray]] = []
        self._remembered: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._projections: dict[int, tuple[dict, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self._documents)

    # The form of the pickled state (:func:`focuscrawl.fue.batch.analysed` keys its cache by it).
    STATE = 2

    def __getstate__(self) -> dict:
        """The analysed documents and their terms by column (a cache's); the analyser and the vocabulary are rebuilt
        on load. The terms go as one newline-joined string (the analyser's tokens hold no whitespace): unpickling the
        vocabulary as a dict made a load of the world project's cache (154,215 terms) take 2.5 s, against 0.13 s so."""
        return {"stop_words": self.stop_words, "terms": "\n".join(self.terms()), "documents": self._documents}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["stop_words"])
        terms = state["terms"].split("\n") if state["terms"] else []
        self._vocabulary, self._documents = dict(zip(terms, range(len(terms)))), state["documents"]

    def add(self, documents: Iterable[str]) -> None:
        """Analyse training documents and keep their counts (rows of ``matrix``, in order)."""
        self._documents.extend(self._count(d) for d in documents)

    def terms(self) -> list[str]:
        """Every term seen so far, by column."""
        out = [""] * len(self._vocabulary)
        for term, j in self._vocabulary.items():
            out[j] = term
        return out

    def matrix(self, rows: Sequence[int] | None = None):
        """The training documents' counts (those of ``rows``, when given): a CSR matrix over every term seen so far."""
        return self._stack(self._documents if rows is None else [self._documents[i] for i in rows])

    def rows(self, texts: Sequence[str]):
        """Counts of ``texts`` (not kept for training); texts of the previous call are not re-analysed."""
        before, now = self._remembered, {}
        for text in texts:
            if text not in now:
                now[text] = before.get(text) or self._count(text)
        self._remembered = now
        return self._stack([now[t] for t in texts])

    def project(self, x, vocabulary: dict[str, int]):
        """Counts ``x`` (our columns) in a fitted vocabulary's columns; unknown terms dropped."""
        from scipy.sparse import csr_matrix

        cached = self._projections.get(id(vocabulary))
        if cached is None or cached[0] is not vocabulary or len(cached[1]) < x.shape[1]:
            where = np.full(len(self._vocabulary), -1, dtype=np.int64)
            for term, j in vocabulary.items():
                i = self._vocabulary.get(term)
                if i is not None:
                    where[i] = j
            self._projections = {id(vocabulary): (vocabulary, where)}  # one model in use at a time
        where = self._projections[id(vocabulary)][1]
        cols = where[x.indices]
        keep = cols >= 0
        row = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
        indptr = np.zeros(x.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(row[keep], minlength=x.shape[0]), out=indptr[1:])
        return csr_matrix((x.data[keep], cols[keep], indptr), shape=(x.shape[0], len(vocabulary)))

    def _count(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        counter: dict[int, int] = {}
        vocabulary = self._vocabulary
        for term in self._analyze(text):
            j = vocabulary.get(term)
            if j is None:
                j = vocabulary[term] = len(vocabulary)
            counter[j] = counter.get(j, 0) + 1
        n = len(counter)
        return np.fromiter(counter.keys(), np.int64, n), np.fromiter(counter.values(), np.int64, n)

    def _stack(self, rows: Sequence[tuple[np.ndarray, np.ndarray]]):
        from scipy.sparse import csr_matrix

        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(i) for i, _ in rows], out=indptr[1:])
        indices = np.concatenate([i for i, _ in rows]) if rows else np.empty(0, np.int64)
        data = np.concatenate([c for _, c in rows]) if rows else np.empty(0, np.int64)
        return csr_matrix((data, indices, indptr), shape=(len(rows), len(self._vocabulary)))
