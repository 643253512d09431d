"""Model store on disk: every trained model is a numbered version with its metrics, its parameters and the Delta
versions of the data it learned from; one version per model name is the champion, moved by the loop's rule
(:meth:`ModelStore.promote_if_not_worse`: not worse on the held-out data; :meth:`ModelStore.promote_newest`: the
newest fit replaces the last) or by a rollback (:meth:`ModelStore.make_champion`).

Layout: ``<root>/<name>/v<N>/model.joblib`` and ``meta.json``; ``<root>/<name>/champion.json``. Every loop keeps its
models in one (the outlink models, the page relevance models, the FUE classifiers and refreshes, the source
estimates); the model registry (MLflow) records each version, whose registry version ``meta.json`` keeps
(:mod:`focuscrawl.orchestration.model_families`, docs/running.md#the-model-registry-mlflow).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import joblib

from focuscrawl.outlinks.params import DEFAULT

# Versions of a refit-per-run model (``promote_newest``) kept on disk: at the source schedule's one run a
# minute, the last hour's fits, each one a rollback target.
KEEP_REFITS = 60


@dataclass
class ModelVersion:
    name: str  # e.g. "NNL-ET_LBLA/int"
    version: int
    metrics: dict[str, float]  # on the held-out period: spearman, pk_area
    data_version: int  # Delta version of the feature table it trained on
    eval_period: int
    features: list[str] = field(default_factory=list)
    history_size: int = DEFAULT.history_size
    created_at: str = ""
    promoted: bool = False
    considered: bool = False  # the promotion rule has judged it (once: a rollback holds until a newer version)
    params: dict[str, Any] = field(default_factory=dict)  # how it was trained (rows, sample, seed, knobs)
    registry_version: int | None = None  # its version in the model registry (MLflow), when it was recorded there
    delta_versions: dict[str, int] = field(default_factory=dict)  # Delta version of each table it read, by name


def _replace(path: Path, data: dict) -> None:
    """Write ``data`` as ``path``'s JSON in one step: a reader in another process sees the old file or the new."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


class ModelStore:
    def __init__(self, root: str | Path, metric: str = "pk_area", tolerance: float = 0.0) -> None:
        self.root = Path(root)
        self.metric = metric
        self.tolerance = tolerance

    def _dir(self, name: str) -> Path:
        return self.root / name.replace("/", "__")

    def names(self) -> list[str]:
        """Every model name with a stored version (``a/b`` for the folder ``a__b``)."""
        found = {p.parent.parent.name for p in self.root.glob("*/v*/meta.json")}
        return sorted(n.replace("__", "/") for n in found)

    def versions(self, name: str) -> list[ModelVersion]:
        metas = sorted(self._dir(name).glob("v*/meta.json"), key=lambda p: int(p.parent.name[1:]))
        return [ModelVersion(**json.loads(p.read_text())) for p in metas]

    def folder(self, meta: ModelVersion) -> Path:
        """The version's folder: ``model.joblib`` and ``meta.json``."""
        return self._dir(meta.name) / f"v{meta.version}"

    def save(self, meta: ModelVersion, fields: tuple[str, ...] | None = None) -> None:
        """Write the version's ``meta.json``: every field, or only ``fields`` over what the file holds.

        Two processes write a version's meta: the loop that stores and judges it, and the model registry's task
        that records it (``registry_version``), seconds apart on versions read before. A whole-object write of
        one would undo the other's field (a champion shown unpromoted, a recorded version logged again), so each
        writes its own fields under the model's lock, and the file is replaced whole (a reader never sees half)."""
        path = self.folder(meta) / "meta.json"
        with open(self._dir(meta.name) / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = asdict(meta)
            if fields is not None:
                data = {**json.loads(path.read_text()), **{f: data[f] for f in fields}}
            _replace(path, data)

    def register(self, meta: ModelVersion, model: Any) -> ModelVersion:
        """Store ``model`` as the next version of ``meta.name`` (the version number is assigned here)."""
        meta.version = max((v.version for v in self.versions(meta.name)), default=0) + 1
        self.folder(meta).mkdir(parents=True, exist_ok=True)
        joblib.dump(model, self.folder(meta) / "model.joblib")
        self.save(meta)
        return meta

    def champion(self, name: str) -> ModelVersion | None:
        pointer = self._dir(name) / "champion.json"
        if not pointer.exists():
            return None
        version = json.loads(pointer.read_text())["version"]
        return next(v for v in self.versions(name) if v.version == version)

    def should_promote(self, candidate: ModelVersion) -> tuple[bool, str]:
        """Promote when there is no champion or the candidate is not worse on the metric (within tolerance)."""
        current = self.champion(candidate.name)
        if current is None:
            return True, "no current model"
        new, old = candidate.metrics[self.metric], current.metrics[self.metric]
        if new + self.tolerance >= old:
            return True, f"{self.metric} {new:.4f} >= current v{current.version} {old:.4f}"
        return False, f"{self.metric} {new:.4f} < current v{current.version} {old:.4f}"

    def promote_if_not_worse(self, candidate: ModelVersion) -> tuple[bool, str]:
        ok, why = self.should_promote(candidate)
        candidate.considered = True
        if ok:
            self.make_champion(candidate)
        else:
            self.save(candidate, ("considered",))
        return ok, why

    def rolled_back(self, name: str) -> ModelVersion | None:
        """The champion when a rollback made it so (it is older than the newest version, which was judged); else None.
        A loop whose every refit replaces the last uses it instead of fitting, so the rollback holds."""
        champion, versions = self.champion(name), self.versions(name)
        if champion is None or not versions[-1].considered or versions[-1].version == champion.version:
            return None
        return champion

    def promote_newest(self, candidate: ModelVersion, fitted_over: ModelVersion | None) -> tuple[bool, str]:
        """The rule of a loop whose every refit replaces the last (a pseudo-trained refresh, a source plan):
        ``candidate`` becomes the champion, judged once, unless the champion moved while it was fitted from
        ``fitted_over`` (the champion when the fit began, None for none): a rollback made meanwhile
        holds, and the candidate is kept unpromoted. Such a loop stores a version per run (the source
        schedule's about one a minute on the live platform), so only the newest :data:`KEEP_REFITS` stay on
        disk: older ones are removed (the model registry keeps those it recorded)."""
        candidate.considered = True
        champion = self.champion(candidate.name)
        if (champion.version if champion else None) != (fitted_over.version if fitted_over else None):
            self.save(candidate, ("considered",))
            return False, f"rolled back to v{champion.version} while it was fitted: the rollback holds"
        self.make_champion(candidate)
        self.prune(candidate.name, KEEP_REFITS)
        return True, "the newest fit replaces the last"

    def prune(self, name: str, keep: int) -> list[int]:
        """Remove every version of ``name`` but the newest ``keep`` and the champion; returns the versions
        removed. A version removed can no longer be rolled back to (``focuscrawl models promote`` says so)."""
        champion = self.champion(name)
        removed = [v.version for v in self.versions(name)[:-keep]
                   if champion is None or v.version != champion.version]
        for version in removed:
            shutil.rmtree(self._dir(name) / f"v{version}")
        return removed

    def make_champion(self, version: ModelVersion) -> None:
        """``version`` becomes the champion, whatever its metrics (the promotion rule's step, and a rollback)."""
        version.promoted = True
        self.save(version, ("promoted", "considered"))
        _replace(self._dir(version.name) / "champion.json", {"version": version.version})

    def load(self, name: str, version: int | None = None) -> tuple[ModelVersion, Any]:
        """The given version, or the champion."""
        meta = self.champion(name) if version is None else next(
            (v for v in self.versions(name) if v.version == version), None)
        if meta is None:
            raise LookupError(f"no {'champion' if version is None else f'version {version}'} of model {name!r} "
                              f"in {self.root}; run the training job (spark_jobs/outlinks_train.py) first")
        return meta, joblib.load(self.folder(meta) / "model.joblib")
