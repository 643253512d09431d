"""The classifier a running FUE process uses, followed as its champion moves: no restart.

Seed 000 (section V) builds the reference and candidate classifiers once, from the training set; they change only
when the training set does (`focuscrawl examples add`, ``focuscrawl.platform.examples``) or when an operator rolls one
back (`focuscrawl models promote`). Either stores the champion in the FUE model store
(:func:`focuscrawl.fue.batch.model_store`) and names its version on the control topic
(``classifier/fue/<project>/<role>``, :func:`focuscrawl.control.classifier_key`). A process given its classifier's
store name follows that key: on a record for it, the follower's thread loads the store's champion (a ``joblib``
load, off the process's own thread), and the process takes the new classifier on its own thread, between two
batches (:meth:`take`), so every verdict or score is made whole by one model. The store's champion, not the version
the record names, is what is loaded: the compacted topic keeps its last record for good, and a starting process
that reads it after a later `focuscrawl train` must not go back to it. The version in use is in the status file
(:meth:`status`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from focuscrawl.control import classifier_version

log = logging.getLogger(__name__)


class ChampionFollower:
    """The classifier ``model`` (its FUE model store name, e.g. ``demo/reference``) in use by a process of ``loop``:
    ``classifier`` as loaded at start, the store's champion then (its version, None for a file the store never
    held). :meth:`apply` is the control follower's callback."""

    def __init__(self, store, model: str, classifier: Any, loop: str = "fue") -> None:
        self.store, self.model, self.loop = store, model, loop
        self.classifier = classifier
        champion = store.champion(model)
        self.version: int | None = champion.version if champion is not None else None
        self.changes = 0
        self._lock = threading.Lock()
        self._wanted = self.version
        self._pending: tuple[int, Any] | None = None

    def apply(self, key: str, value: dict | None) -> None:
        """A control record (on the follower's thread): one about ``model`` loads the store's champion, when it is
        not the one in use."""
        named = classifier_version(key, value, self.loop, self.model)
        if named is None:
            return
        champion = self.store.champion(self.model)
        if champion is None or champion.version == self._wanted:
            return
        try:
            meta, classifier = self.store.load(self.model, champion.version)
        except (LookupError, OSError) as exc:  # pruned meanwhile, or unreadable: go on with the one in use
            log.warning("classifier %s: champion v%d cannot be loaded (%s); keeping v%s", self.model,
                        champion.version, exc, self.version)
            return
        if meta.version != named:
            log.info("classifier %s: the control topic names v%d, the store's champion is v%d: using v%d",
                     self.model, named, meta.version, meta.version)
        with self._lock:
            self._wanted, self._pending = meta.version, (meta.version, classifier)

    def take(self) -> Any | None:
        """The classifier newly named since the last call, once (on the process's own thread); None when none."""
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return None
        previous, (self.version, self.classifier) = self.version, pending
        self.changes += 1
        log.info("classifier %s: v%s in use (was v%s)", self.model, self.version, previous)
        return self.classifier

    def status(self) -> dict:
        return {"classifier": {"model": self.model, "version": self.version, "changes": self.changes}}


__all__ = ["ChampionFollower"]
