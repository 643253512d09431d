"""HCP with pseudo-training: retrain the candidate classifier with pseudo-labelled extracted users.

Seed 000 (*Real-time focused extraction of social media users*) section V ("HCP With Pseudo-Training"): users that were
chosen, fully extracted and judged by the evaluation classifier join the training set with
that judgement as label; "every five minutes, a new prediction classifier is built from the
original training set plus the new pseudo-examples available", and the candidates' scores are
recomputed with it (the paper's Batch Updater re-scored its 50,000 best candidates). The
variants differ by who joins (``PseudoLabelling``): HCP-0.9-0.1, HCP-0.5-0.5 and positives only.

``PseudoTrainer`` is the step, for the experiment's run and (through ``retrain_and_rescore``,
the whole step on plain data: lists of strings and floats) for the Airflow task; the schedule
and the original training set belong to the caller: the experiment's fold of corpus donors, the
DAG's the project's example users (:func:`focuscrawl.fue.examples.example_set`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from focuscrawl.fue.classifier import TermCounts, UserClassifier
from focuscrawl.fue.methods import RANKING_METHODS
from focuscrawl.fue.params import DEFAULT


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


class PseudoTrainer:
    """One variant's pseudo-training: the original training set plus the pseudo-examples so far.

    The one path of both callers. The experiment keeps a trainer for the whole run: ``add`` records
    each extracted user's judgement as it comes, and every five simulated minutes ``retrain`` builds
    a new classifier only when new examples joined since the last one (as the paper's Model Trainer
    did) and ``rescore`` re-scores the best waiting candidates. The DAG keeps no state between runs:
    :func:`retrain_and_rescore` makes a trainer from the tables of the run and always retrains.

    Every document is analysed once, when it joins (``counts``), so a retrain costs the model fit,
    not re-tokenising a training set that grows all run; ``rescore`` reuses ``counts`` too. The
    model is the one ``UserClassifier.fit`` makes on the same documents (``fit_counts``).
    """

    def __init__(
        self,
        train_documents: Sequence[str] | TermCounts,
        train_labels: Sequence[int],
        labelling: PseudoLabelling,
        classifier_params: dict | None = None,
    ) -> None:
        """``train_documents``: the original documents, or those documents already analysed (``TermCounts``,
        e.g. from the DAG's cache: ``focuscrawl.fue.batch.analysed``), which the trainer then extends."""
        self.labelling = labelling
        self.classifier_params = classifier_params or {}
        stop_words = UserClassifier(**self.classifier_params).stop_words
        if isinstance(train_documents, TermCounts):
            if train_documents.stop_words != stop_words or len(train_documents) != len(train_labels):
                raise ValueError(f"the analysed originals ({len(train_documents)} documents, stop_words="
                                 f"{train_documents.stop_words!r}) do not match {len(train_labels)} labels and "
                                 f"stop_words={stop_words!r}")
            self.counts = train_documents
        else:
            self.counts = TermCounts(stop_words=stop_words)
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

    def retrain(self, *, only_if_new: bool = True) -> UserClassifier | None:
        """A new candidate classifier; None when ``only_if_new`` and no pseudo-example arrived since the last."""
        if only_if_new and self.pseudo_count == self._trained_with:
            return None
        self._trained_with = self.pseudo_count
        return UserClassifier(**self.classifier_params).fit_counts(self.counts, self._labels)

    def rescore(self, model: UserClassifier, candidates: Iterable[tuple[str, str, float]],
                top_n: int = DEFAULT.top_n) -> list[tuple[str, float]]:
        """``(user, new score)`` of the ``top_n`` best ``(user, evidence text, current score)`` candidates
        by current score, re-scored by ``model``, best first (texts of the last call are not re-analysed)."""
        top = sorted(candidates, key=lambda c: -c[2])[:top_n]
        if not top:
            return []
        scores = model.predict_proba_counts(self.counts, [text for _, text, _ in top])
        return sorted(((user, float(s)) for (user, _, _), s in zip(top, scores)), key=lambda us: -us[1])


def retrain_and_rescore(
    train_documents: Sequence[str] | TermCounts,
    train_labels: Sequence[int],
    extracted: Iterable[tuple[str, float]],
    labelling: PseudoLabelling,
    candidates: Iterable[tuple[str, str, float]],
    *,
    top_n: int = DEFAULT.top_n,
    classifier_params: dict | None = None,
) -> tuple[UserClassifier, list[tuple[str, float]]]:
    """One pseudo-training step from scratch (the DAG's: it keeps no trainer between runs).

    ``extracted``: ``(full text, reference probability)`` of extracted users so far.
    ``candidates``: ``(user, evidence text, current score)`` of waiting candidates; the
    ``top_n`` best by current score are re-scored. Returns the new candidate classifier (retrained
    even without a pseudo-example: new candidates keep arriving) and ``(user, new score)`` pairs,
    best first, to push to the choosers.
    """
    trainer = PseudoTrainer(train_documents, train_labels, labelling, classifier_params)
    for text, proba in extracted:
        trainer.add(text, proba)
    model = trainer.retrain(only_if_new=False)
    return model, trainer.rescore(model, candidates, top_n)
