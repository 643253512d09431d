"""Model registry on disk: every trained model is a numbered version with its metrics, its features
and the Delta version of the data it learned from; one version per model name is the champion
(promotion only when not worse than the current model on the held-out period).

Layout: ``<root>/<name>/v<N>/model.joblib`` and ``meta.json``; ``<root>/<name>/champion.json``.
The Spark training job also appends each version's metadata to the ``outlink_models`` Delta table, and logs
each version to the model registry (MLflow, docs/running.md#the-model-registry-mlflow), whose version number
``meta.json`` keeps.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import joblib

from focuscrawl.outlinks.params import DEFAULT


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


class ModelStore:
    def __init__(self, root: str | Path, metric: str = "pk_area", tolerance: float = 0.0) -> None:
        self.root = Path(root)
        self.metric = metric
        self.tolerance = tolerance

    def _dir(self, name: str) -> Path:
        return self.root / name.replace("/", "__")

    def versions(self, name: str) -> list[ModelVersion]:
        metas = sorted(self._dir(name).glob("v*/meta.json"), key=lambda p: int(p.parent.name[1:]))
        return [ModelVersion(**json.loads(p.read_text())) for p in metas]

    def folder(self, meta: ModelVersion) -> Path:
        """The version's folder: ``model.joblib`` and ``meta.json``."""
        return self._dir(meta.name) / f"v{meta.version}"

    def save(self, meta: ModelVersion) -> None:
        """Write the version's ``meta.json`` (its promotion, its registry version)."""
        (self.folder(meta) / "meta.json").write_text(json.dumps(asdict(meta), indent=1))

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
            self.save(candidate)
        return ok, why

    def make_champion(self, version: ModelVersion) -> None:
        """``version`` becomes the champion, whatever its metrics (the promotion rule's step, and a rollback)."""
        version.promoted = True
        self.save(version)
        (self._dir(version.name) / "champion.json").write_text(json.dumps({"version": version.version}))

    def load(self, name: str, version: int | None = None) -> tuple[ModelVersion, Any]:
        """The given version, or the champion."""
        meta = self.champion(name) if version is None else next(
            (v for v in self.versions(name) if v.version == version), None)
        if meta is None:
            raise LookupError(f"no {'champion' if version is None else f'version {version}'} of model {name!r} "
                              f"in {self.root}; run the training job (spark_jobs/outlinks_train.py) first")
        return meta, joblib.load(self.folder(meta) / "model.joblib")
