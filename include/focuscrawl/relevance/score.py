"""Score fetched pages on the live path with the champion page relevance model of the project.

The fetching process holds a :class:`PageScorer`: the champion of ``[profile.pages] model`` in the
project's page model store (:func:`focuscrawl.relevance.train.store_for`), loaded on first use and
again whenever a newer champion is promoted (``focuscrawl train`` or the ``page_relevance`` DAG), checked
at most every ``check_every`` seconds. A page in a language outside ``[profile] languages`` scores 0; a
page scored before any model was trained has no score (None), never a made-up one. ``on_scored(relevant)``
hears every page scored: the process counts its loop's harvest with it
(``focuscrawl.stream.metrics.Metrics.page_scored``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

log = logging.getLogger(__name__)


class PageScorer:
    """``score(main_text, language) -> (relevance in [0, 1] or None, "MODEL/vN" or None)``."""

    def __init__(self, store_root: str | Path, model: str, languages: Sequence[str] = (), threshold: float = 0.5,
                 check_every: float = 30.0, clock: Callable[[], float] = time.monotonic,
                 on_scored: Callable[[bool], None] | None = None) -> None:
        from focuscrawl.outlinks.store import ModelStore

        self.store = ModelStore(store_root)
        self.model = model.upper()
        self.languages = tuple(languages)
        self.threshold = threshold
        self.check_every = check_every
        self.clock = clock
        self.on_scored = on_scored
        self._loaded: tuple[int, object] | None = None
        self._checked = float("-inf")
        self._lock = threading.Lock()

    def _champion_version(self) -> int | None:
        pointer = self.store._dir(self.model) / "champion.json"
        try:
            return int(json.loads(pointer.read_text())["version"])
        except (FileNotFoundError, ValueError, KeyError):
            return None

    def current(self) -> tuple[int, object] | None:
        """``(version, fitted model)`` of the champion, reloaded when a newer one was promoted."""
        with self._lock:
            now = self.clock()
            if now - self._checked >= self.check_every:
                self._checked = now
                version = self._champion_version()
                if version is not None and (self._loaded is None or self._loaded[0] != version):
                    meta, fitted = self.store.load(self.model, version)
                    self._loaded = (meta.version, fitted)
                    log.info("page relevance: %s v%d loaded from %s", self.model, meta.version, self.store.root)
            return self._loaded

    def score(self, main_text: str, language: str | None) -> tuple[float | None, str | None]:
        loaded = self.current()
        if loaded is None:
            return None, None
        version, fitted = loaded
        name = f"{self.model}/v{version}"
        if self.languages and language is not None and language not in self.languages:
            score = 0.0
        else:
            score = float(fitted.predict_proba([main_text or ""])[0])
        if self.on_scored is not None:
            self.on_scored(self.relevant(score))
        return score, name

    def relevant(self, score: float | None) -> bool:
        return score is not None and score >= self.threshold


def add_relevance_arguments(parser) -> None:
    """A fetching process's flags for scoring its pages (what ``focuscrawl.platform.plan`` passes)."""
    parser.add_argument("--relevance-store", help="the project's page relevance model store (focuscrawl train writes "
                                                  "it): every fetched page is scored by its champion")
    parser.add_argument("--relevance-model", default="TFIDF-LR", help="registered page relevance model whose champion scores")
    parser.add_argument("--relevance-threshold", type=float, default=0.5, help="a page at or above it counts as relevant")
    parser.add_argument("--languages", default="", help="comma list of ISO 639-1 codes; pages in others score 0")


def scorer_from_args(args, on_scored: Callable[[bool], None] | None = None) -> PageScorer | None:
    """The :class:`PageScorer` the flags of :func:`add_relevance_arguments` ask for (None without a store)."""
    if not args.relevance_store:
        return None
    return PageScorer(args.relevance_store, args.relevance_model, [c for c in args.languages.split(",") if c],
                      args.relevance_threshold, on_scored=on_scored)


__all__ = ["PageScorer", "add_relevance_arguments", "scorer_from_args"]
