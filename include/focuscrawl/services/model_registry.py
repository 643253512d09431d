"""The model registry as the loops use it: log a fitted model, register it, move its ``champion`` alias.

A client of the MLflow server (:mod:`focuscrawl.services.mlflow`), as
:class:`~focuscrawl.services.airflow.AirflowClient` is Airflow's. One version is one run in the loop's experiment: the model file the loop's own store wrote
(the file the running processes read), its parameters, its metrics on held-out data, and the Delta table
versions it trained on (run parameters ``delta_version.<table>``, the same as tags of the registered version so
a listing needs no run). The loop's promotion rule decides; :meth:`ModelRegistry.set_champion` records it as
the alias ``champion`` (docs/running.md#the-model-registry-mlflow).

Credentials: MLflow's client reads them from ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD``, so
:class:`ModelRegistry` sets them in this process's environment only (as a Spark task sets ``SPARK_REMOTE``);
they are never logged, and no run records them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from focuscrawl.config import Settings

CHAMPION = "champion"
DELTA_VERSION = "delta_version."  # prefix of a run parameter / version tag: the table's Delta version
FIX = "`focuscrawl services up --only mlflow` starts it"


@dataclass(frozen=True)
class RegisteredVersion:
    """One registered version as ``focuscrawl models`` lists it."""

    name: str
    version: int
    metrics: dict[str, float]
    delta_versions: dict[str, int]
    aliases: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict)


class ModelRegistry:
    def __init__(self, tracking_uri: str, user: str, password: str) -> None:
        from mlflow import MlflowClient

        os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"] = user, password
        self.uri = tracking_uri
        self.client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)

    @classmethod
    def from_settings(cls, cfg: Settings) -> "ModelRegistry":
        from focuscrawl.services.mlflow import credentials

        return cls(cfg.mlflow_url, *credentials(cfg))

    def _experiment(self, name: str) -> str:
        found = self.client.get_experiment_by_name(name)
        return found.experiment_id if found is not None else self.client.create_experiment(name)

    def _registered(self, name: str) -> None:
        from mlflow.exceptions import MlflowException

        try:
            self.client.create_registered_model(name)
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise

    def log_version(self, experiment: str, name: str, files: list[Path], params: Mapping[str, object],
                    metrics: Mapping[str, float], delta_versions: Mapping[str, int],
                    tags: Mapping[str, str] | None = None) -> int:
        """Log ``files`` (the model as the loop stored it) under ``model/`` of a new run in ``experiment``, with
        ``params``, ``metrics`` and the Delta versions it trained on, and register it as the next version of
        ``name``; returns that version's number."""
        from mlflow.entities import Metric, Param, RunTag

        tags = {str(k): str(v) for k, v in (tags or {}).items()}
        lineage = {f"{DELTA_VERSION}{table}": str(int(v)) for table, v in delta_versions.items()}
        run = self.client.create_run(self._experiment(experiment), run_name=name,
                                     tags={"focuscrawl.model": name, **tags})
        run_id = run.info.run_id
        try:
            self.client.log_batch(
                run_id,
                metrics=[Metric(k, float(v), run.info.start_time, 0) for k, v in metrics.items()],
                params=[Param(str(k), str(v)) for k, v in {**params, **lineage}.items()],
                tags=[RunTag(k, v) for k, v in tags.items()])
            for path in files:
                self.client.log_artifact(run_id, str(path), artifact_path="model")
        except BaseException:
            self.client.set_terminated(run_id, "FAILED")
            raise
        self.client.set_terminated(run_id, "FINISHED")
        self._registered(name)
        version = self.client.create_model_version(name, f"runs:/{run_id}/model", run_id=run_id,
                                                   tags={**lineage, **tags})
        return int(version.version)

    def set_champion(self, name: str, version: int) -> None:
        self.client.set_registered_model_alias(name, CHAMPION, str(version))

    def champion(self, name: str) -> int | None:
        """The version ``name``'s ``champion`` alias points at; None when it has none (or no such model)."""
        from mlflow.exceptions import MlflowException

        try:
            aliases = self.client.get_registered_model(name).aliases or {}
        except MlflowException as exc:
            if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise
        return int(aliases[CHAMPION]) if CHAMPION in aliases else None

    def version(self, name: str, version: int) -> RegisteredVersion:
        mv = self.client.get_model_version(name, str(version))
        return self._listed(name, mv, self._aliases(name))

    def _aliases(self, name: str) -> dict[int, tuple[str, ...]]:
        by_version: dict[int, tuple[str, ...]] = {}
        for alias, version in (self.client.get_registered_model(name).aliases or {}).items():
            by_version[int(version)] = (*by_version.get(int(version), ()), alias)
        return by_version

    def _listed(self, name: str, mv, aliases: dict[int, tuple[str, ...]]) -> RegisteredVersion:
        metrics = dict(self.client.get_run(mv.run_id).data.metrics) if mv.run_id else {}
        tags = dict(mv.tags or {})
        delta = {k[len(DELTA_VERSION):]: int(v) for k, v in tags.items() if k.startswith(DELTA_VERSION)}
        return RegisteredVersion(name, int(mv.version), metrics, delta, aliases.get(int(mv.version), ()),
                                 {k: v for k, v in tags.items() if not k.startswith(DELTA_VERSION)})

    def versions(self) -> list[RegisteredVersion]:
        """Every version of every registered model, by name then version."""
        out = []
        for model in self.client.search_registered_models(max_results=1000):
            aliases = self._aliases(model.name)
            found = self.client.search_model_versions(f"name = '{model.name}'", max_results=10000)
            out += [self._listed(model.name, mv, aliases) for mv in found]
        return sorted(out, key=lambda v: (v.name, v.version))


def unavailable(cfg: Settings) -> str | None:
    """Why the registry cannot be used now, with the fix; None when its server answers its health probe."""
    from focuscrawl.services.mlflow import MlflowServer

    probe = MlflowServer(cfg).probe()
    return None if probe.up else f"the model registry (MLflow at {cfg.mlflow_url}) is down ({probe.detail}); {FIX}"


def connect(cfg: Settings, log: Callable[[str], None] = print) -> ModelRegistry | None:
    """The registry, or None after one line saying why not and how to start it. A task goes on without it: the
    running processes read the loops' own model files, so a registry that is down costs the record of this
    run (a version, an alias), not the loop's push."""
    why = unavailable(cfg)
    if why is not None:
        log(f"WARNING: {why}. Nothing of this run is recorded there.")
        return None
    return ModelRegistry.from_settings(cfg)
