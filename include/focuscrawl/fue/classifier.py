"""The user classifier: TF-IDF features and L1-regularised logistic regression.

Seed ``000_c12b299f5bad9cdf.txt`` section IV-F: "a Logistic Regression model with L1
regularisation implemented in Python with scikit-learn ... built with a training set of 486
users ... represented with a single document consisting of the concatenation of all their
writings", and "a threshold equal to 0.9" to call a user on-target. The hyper-parameters
default to those of the paper's published trainer (blind-sniper/heuristics
``model_trainer.py``): word counts with ``min_df=20`` and English stop words, TF-IDF, liblinear
L1 with ``C=16`` and class weights ``w/(1+w)`` for positives with ``w=4``.

Two instances play two roles (section V, "HCP with pseudo-training"):
- the *reference* (evaluation) classifier judges an extracted user's full history;
- the *candidate* (prediction) classifier scores the little text seen in listings for HCP/LCP.
In the paper both are the same model; ``short_evidence_corpus`` builds the training set for a
candidate classifier fitted on short snippets instead, closer to what it will see.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

REFERENCE_THRESHOLD = 0.9


class UserClassifier:
    """P(user is on-target | text). ``fit`` returns self; learned state ends in ``_``."""

    def __init__(
        self,
        *,
        C: float = 16.0,
        positive_weight: float = 4.0,
        min_df: int | float = 20,
        stop_words: str | None = "english",
        threshold: float = REFERENCE_THRESHOLD,
    ) -> None:
        self.C = C
        self.positive_weight = positive_weight
        self.min_df = min_df
        self.stop_words = stop_words
        self.threshold = threshold

    def fit(self, documents: Sequence[str], labels: Sequence[int]) -> "UserClassifier":
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        y = np.asarray(labels, dtype=int)
        if set(np.unique(y)) != {0, 1}:
            raise ValueError("training needs both positive (1) and negative (0) users")
        w = self.positive_weight
        self.vectorizer_ = TfidfVectorizer(min_df=self.min_df, stop_words=self.stop_words)
        x = self.vectorizer_.fit_transform(documents)
        self.model_ = LogisticRegression(
            penalty="l1", solver="liblinear", C=self.C, class_weight={0: 1.0 / (1.0 + w), 1: w / (1.0 + w)}
        ).fit(x, y)
        return self

    def predict_proba(self, texts: Iterable[str]) -> np.ndarray:
        """P(on-target) for each text, as a float array."""
        x = self.vectorizer_.transform(list(texts))
        return self.model_.predict_proba(x)[:, 1]

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


def erisk_histories(source: str | Path, cache_dir: str | Path) -> tuple[list[list[str]], list[int]]:
    """Per-user lists of writings (``title\\ntext``) and labels from an eRisk collection.

    Reads through the world's cached eRisk corpus loader (one parser for the project).
    """
    from focuscrawl.world.corpus import EriskCorpus

    corpus = EriskCorpus.load(Path(source), Path(cache_dir))
    histories, labels = [], []
    for label in (True, False):
        for donor in range(corpus.donors(label)):
            writings = (corpus.writing(label, donor, j) for j in range(corpus.size(label, donor)))
            histories.append([f"{title}\n{text}" if title else text for title, text, _ in writings])
            labels.append(int(label))
    return histories, labels


def train_reference_classifier(histories: Sequence[Sequence[str]], labels: Sequence[int], **params) -> UserClassifier:
    """The seed's reference classifier: one document per user, the paper's hyper-parameters."""
    return UserClassifier(**params).fit(["\n".join(h) for h in histories], labels)


def train_candidate_classifier(
    histories: Sequence[Sequence[str]], labels: Sequence[int], *, seed: int = 0, **params
) -> UserClassifier:
    """A candidate classifier for HCP/LCP fitted on short snippets (``short_evidence_corpus``).

    Snippets are many and short, so words are kept from 5 snippets up (``min_df``) by default.
    """
    docs, ys = short_evidence_corpus(histories, labels, seed=seed)
    return UserClassifier(**{"min_df": 5, **params}).fit(docs, ys)
