"""HCP with pseudo-training: retrain the candidate classifier with pseudo-labelled extracted users.

Seed ``000_c12b299f5bad9cdf.txt`` section V ("HCP With Pseudo-Training"): users that were
chosen, fully extracted and judged by the evaluation classifier join the training set with
that judgement as label; "every five minutes, a new prediction classifier is built from the
original training set plus the new pseudo-examples available", and the candidates' scores are
recomputed with it (the paper's Batch Updater re-scored its 50,000 best candidates). The
variants differ by who joins (``PseudoLabelling``): HCP-0.9-0.1, HCP-0.5-0.5 and positives only.

``retrain_and_rescore`` is the whole step on plain data (lists of strings and floats) so a
Spark job or an Airflow task can call it; the schedule belongs to the DAG.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from focuscrawl.fue.classifier import TermCounts, UserClassifier
from focuscrawl.fue.methods import RANKING_METHODS


@dataclass(frozen=True, slots=True)
class PseudoLabelling:
    """Who joins the training set: probability >= ``positive_at`` as positive, <= ``negative_at``
    as negative (``None``: no negatives). Users in between are dismissed."""

    positive_at: float
    negative_at: float | None

    @classmethod
    def for_method(cls, name: str) -> "PseudoLabelling":
        """The labelling of a registered pseudo-trained HCP variant, e.g. ``"HCP-0.9-0.1"``."""
        method = RANKING_METHODS.get(name)
        labelling = getattr(method, "pseudo_labelling", None)
        if labelling is None:
            raise ValueError(f"{name} is not a pseudo-trained HCP variant")
        return cls(*labelling)

    def label(self, proba: float) -> int | None:
        if proba >= self.positive_at:
            return 1
        if self.negative_at is not None and proba <= self.negative_at:
            return 0
        return None


def pseudo_examples(extracted: Iterable[tuple[str, float]], labelling: PseudoLabelling) -> tuple[list[str], list[int]]:
    """``(text, reference probability)`` of extracted users -> the pseudo-labelled examples."""
    docs, labels = [], []
    for text, proba in extracted:
        label = labelling.label(proba)
        if label is not None:
            docs.append(text)
            labels.append(label)
    return docs, labels


def retrain_and_rescore(
    train_documents: Sequence[str],
    train_labels: Sequence[int],
    extracted: Iterable[tuple[str, float]],
    labelling: PseudoLabelling,
    candidates: Iterable[tuple[str, str, float]],
    *,
    top_n: int = 50_000,
    classifier_params: dict | None = None,
) -> tuple[UserClassifier, list[tuple[str, float]]]:
    """One pseudo-training step.

    ``extracted``: ``(full text, reference probability)`` of extracted users so far.
    ``candidates``: ``(user, evidence text, current score)`` of waiting candidates; the
    ``top_n`` best by current score are re-scored. Returns the new candidate classifier and
    ``(user, new score)`` pairs, best first, to push to the choosers.
    """
    docs, labels = pseudo_examples(extracted, labelling)
    model = UserClassifier(**(classifier_params or {})).fit(list(train_documents) + docs, list(train_labels) + labels)
    top = sorted(candidates, key=lambda c: -c[2])[:top_n]
    if not top:
        return model, []
    scores = model.predict_proba([text for _, text, _ in top])
    rescored = sorted(((user, float(s)) for (user, _, _), s in zip(top, scores)), key=lambda us: -us[1])
    return model, rescored


class PseudoTrainer:
    """Keeps the original training set and the pseudo-examples collected so far for one variant.

    ``add`` records an extracted user's judgement; ``retrain`` builds a new classifier only
    when new examples joined since the last one (as the paper's Model Trainer did). Every
    document is analysed once, when it joins (``counts``), so a retrain costs the model fit,
    not re-tokenising a training set that grows all run; ``rescore`` reuses ``counts`` too.
    """

    def __init__(
        self,
        train_documents: Sequence[str],
        train_labels: Sequence[int],
        labelling: PseudoLabelling,
        classifier_params: dict | None = None,
    ) -> None:
        self.labelling = labelling
        self.classifier_params = classifier_params or {}
        self.counts = TermCounts(stop_words=UserClassifier(**self.classifier_params).stop_words)
        self.counts.add(train_documents)
        self._labels: list[int] = list(train_labels)
        self._original = len(self._labels)
        self._trained_with = 0

    @property
    def pseudo_count(self) -> int:
        return len(self._labels) - self._original

    def add(self, text: str, reference_proba: float) -> bool:
        """Record an extracted user; True if it joined the training set."""
        label = self.labelling.label(reference_proba)
        if label is None:
            return False
        self.counts.add([text])
        self._labels.append(label)
        return True

    def retrain(self) -> UserClassifier | None:
        """A new candidate classifier, or None when no pseudo-example arrived since the last."""
        if self.pseudo_count == self._trained_with:
            return None
        self._trained_with = self.pseudo_count
        return UserClassifier(**self.classifier_params).fit_counts(self.counts, self._labels)

    def rescore(self, model: UserClassifier, texts: Sequence[str]):
        """``model``'s probabilities of candidate texts (the texts of the last call are not re-analysed)."""
        return model.predict_proba_counts(self.counts, texts)
