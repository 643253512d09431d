"""Fixtures of the focused-user-extraction tests: a tiny candidate classifier trained on toy text."""

from __future__ import annotations

import pytest

from focuscrawl import testing
from focuscrawl.fue import UserClassifier
from focuscrawl.testing import OTHER_WORDS, TARGET_WORDS, toy_corpus


@pytest.fixture(scope="session")
def toy_vocabulary() -> tuple[list[str], list[str]]:
    """(target words, other words) of the toy corpus."""
    return TARGET_WORDS, OTHER_WORDS


@pytest.fixture(scope="session")
def toy_training_set() -> tuple[list[str], list[int]]:
    return toy_corpus()


@pytest.fixture(scope="session")
def toy_classifier() -> UserClassifier:
    return testing.toy_classifier()
