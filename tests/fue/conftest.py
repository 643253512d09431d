"""Fixtures of the focused-user-extraction tests: a tiny candidate classifier trained on toy text."""

from __future__ import annotations

import random

import pytest

from focuscrawl.fue import UserClassifier

TARGET_WORDS = "depressed hopeless lonely insomnia therapy worthless crying numb".split()
OTHER_WORDS = "football recipe guitar election camera garden weekend concert".split()


def toy_corpus() -> tuple[list[str], list[int]]:
    """Each document: two words of its class and one of the other, so no word alone separates them."""
    rng = random.Random(0)
    docs, labels = [], []
    for _ in range(60):
        for label, own, other in ((1, TARGET_WORDS, OTHER_WORDS), (0, OTHER_WORDS, TARGET_WORDS)):
            docs.append(" ".join(rng.sample(own, 2) + [rng.choice(other)]))
            labels.append(label)
    return docs, labels


@pytest.fixture(scope="session")
def toy_vocabulary() -> tuple[list[str], list[str]]:
    """(target words, other words) of the toy corpus."""
    return TARGET_WORDS, OTHER_WORDS


@pytest.fixture(scope="session")
def toy_training_set() -> tuple[list[str], list[int]]:
    return toy_corpus()


@pytest.fixture(scope="session")
def toy_classifier(toy_training_set) -> UserClassifier:
    docs, labels = toy_training_set
    return UserClassifier(min_df=1, stop_words=None, C=10.0).fit(docs, labels)
