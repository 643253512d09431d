"""Every learned model in the model registry (MLflow): one :class:`ModelFamily` per loop, one mirror for all.

A family is a loop's model store (:class:`focuscrawl.outlinks.store.ModelStore`: the files its running processes
or its next DAG run read, one champion per model) and how the registry names its models. :func:`mirror` brings
the registry up to a family's store: every stored version it lacks is logged (its files, the parameters it was
fitted with, its held-out metrics, the loop's or, for a loop that measures none, measured here: ``held_out``,
for the newest and the champion of the versions it lacks; the Delta versions of the tables it read) and registered, and the ``champion`` alias follows the store's
champion, which the loop's own promotion rule moved. :func:`promote_registered` is the rollback (``focuscrawl
models promote NAME VERSION``): it moves the store's champion, which the loop then follows, and the alias. The ``model_registry`` DAG runs :func:`mirror`
once per family when a loop pushed or stored a model (docs/running.md#the-model-registry-mlflow).

The families (:func:`families`):

- ``outlinks``: the revisits loop's models (``$FOCUSCRAWL_VAR/models/outlinks``), trained by ``outlinks_train``;
- ``pages``: the active project's page relevance models (``$FOCUSCRAWL_VAR/models/<project>/pages``), refitted by
  ``page_relevance``;
- ``fue``: the FUE reference and candidate classifiers ``focuscrawl train`` fits and ``focuscrawl examples add``
  refits (``<project>/reference``, ``<project>/candidate``) and each pseudo-trained refresh of
  ``fue_pseudo_training`` (``pseudo/<method>``), in ``$FOCUSCRAWL_VAR/models/fue``;
- ``sources``: the source schedule's fitted parameters (each source's λ, P, μ) of ``source_schedule``
  (``$FOCUSCRAWL_VAR/models/sources``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from focuscrawl.config import Settings
from focuscrawl.outlinks.store import KEEP_REFITS, ModelStore, ModelVersion

FAMILIES = ("outlinks", "pages", "fue", "sources")
# The tag of a version recorded without held-out figures because a newer one was stored first (see mirror).
HELD_OUT_TAG = "focuscrawl.held_out"


@dataclass(frozen=True)
class ModelFamily:
    """A loop's model store as the registry records it. ``name`` is the registry's experiment and the prefix of
    its model names; ``data_table`` names the table whose Delta version a version's ``data_version`` is (the
    outlink models'); ``follows`` says when the loop follows a new champion (what a rollback prints);
    ``on_champion`` runs after a rollback moved the store's champion (e.g. to copy it where processes read it);
    ``held_out`` measures a stored version that has no metrics yet, before it is recorded (the loops that refit
    every run measure nothing themselves: the registry does it, off their runs)."""

    name: str
    store: ModelStore
    keys: tuple[str, ...] | None = None  # the store's model names to record; None: every one stored
    data_table: str | None = None
    follows: str = ""
    on_champion: Callable[[ModelStore, ModelVersion], None] | None = None
    held_out: Callable[[ModelVersion], dict[str, float]] | None = None

    def models(self) -> list[str]:
        return list(self.keys) if self.keys is not None else self.store.names()

    def registered_name(self, key: str) -> str:
        """The registry's name of a store key: ``NNL-ET_LBLA/int`` -> ``outlinks.NNL-ET_LBLA.int`` (MLflow's
        names take no ``/``)."""
        return f"{self.name}.{key.replace('/', '.')}"

    def store_key(self, name: str) -> str | None:
        """The store key of a registry name (:meth:`registered_name`'s inverse); None for no model of this family."""
        if not name.startswith(f"{self.name}."):
            return None
        return next((k for k in self.models() if self.registered_name(k) == name), None)

    def lineage(self, meta: ModelVersion) -> dict[str, int]:
        """The Delta versions of the tables ``meta`` was fitted on."""
        return {**({self.data_table: meta.data_version} if self.data_table else {}), **meta.delta_versions}

    def record(self, registry, meta: ModelVersion, tags: dict[str, str] | None = None) -> None:
        """Log the stored version ``meta`` to ``registry`` (the files of its folder, meta.json last) with ``tags``
        besides the store's, and keep the registry's version number in its meta.json."""
        folder = self.store.folder(meta)
        files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != "meta.json" and p.suffix != ".tmp")
        tags = {"focuscrawl.store_version": meta.version, **(tags or {}),
                **({"focuscrawl.eval_period": meta.eval_period} if meta.eval_period else {})}
        meta.registry_version = registry.log_version(
            self.name, self.registered_name(meta.name), [*files, folder / "meta.json"], params=meta.params,
            metrics=meta.metrics, delta_versions=self.lineage(meta), tags=tags)
        self.store.save(meta, ("registry_version",))


def mirror(family: ModelFamily, registry) -> list[str]:
    """Bring ``registry`` up to ``family``'s store: log every stored version it lacks and point each model's
    ``champion`` alias at the store's champion, asking first (the alias is set only when it moved). Returns
    what it did, a line per model."""
    done = []
    for key in family.models():
        name = family.registered_name(key)
        logged = [v for v in family.store.versions(key) if v.registry_version is None]
        champion = family.store.champion(key)
        # Measuring is a refit's cost again (a cross-validation, a replay of the tables): a registry behind by
        # several refits measures the newest and the champion only, so one run's work stays bounded and the
        # backlog cannot grow while each refit costs less than measuring it (the CI of ff60cec: record_sources
        # measured 5 fits in 10.5 min, record_fue 2 in 10 min, while the loops stored one every 2-3 min).
        measured = {v.version for v in logged[-1:]} | ({champion.version} if champion is not None else set())
        unmeasured, superseded = [], []
        for version in logged:
            tags = {}
            if family.held_out is not None and not version.metrics:
                if version.version in measured:
                    try:
                        version.metrics = family.held_out(version)
                    except Exception as exc:  # noqa: BLE001 - a figure that cannot be measured costs the figure, not the record
                        unmeasured.append(f"v{version.version}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                    family.store.save(version, ("metrics",))
                else:
                    superseded.append(version.version)
                    tags[HELD_OUT_TAG] = (f"not measured: v{logged[-1].version} was stored before the registry "
                                          "reached this version, and only the newest and the champion are measured")
            family.record(registry, version, tags)
        champion = family.store.champion(key)  # as recorded now, with its registry version
        behind = ""
        if champion is not None and champion.registry_version is None:
            # stored while this run recorded (a loop refitting faster than the registry records: record_fue and
            # record_sources took 6-9 min a run in the CI of f9dea0c, the loops refit every 2-3 min): the alias
            # follows the newest champion recorded, and the next run moves it on
            behind = f" (the store's champion v{champion.version}, stored meanwhile, is recorded by the next run)"
            champion = next((v for v in reversed(family.store.versions(key))
                             if v.promoted and v.registry_version is not None), None)
        moved = ""
        if champion is not None and champion.registry_version is not None:
            if registry.champion(name) != champion.registry_version:
                registry.set_champion(name, champion.registry_version)
                moved = " (alias moved)"
        done.append(f"{name}: logged store version(s) {[v.version for v in logged] or 'none new'}; champion "
                    + (f"v{champion.registry_version}{moved}" if champion is not None and champion.registry_version
                       is not None else "none") + behind
                    + (f"; held-out figures not measured for {'; '.join(unmeasured)}" if unmeasured else "")
                    + (f"; superseded before measured: {superseded}" if superseded else ""))
    return done


def promote_registered(family: ModelFamily, registry, name: str, version: int) -> ModelVersion:
    """Make the registry's ``version`` of ``name`` the champion whatever its metrics (a rollback): the store's
    champion, which the loop follows (``family.follows``), and the registry's alias. The loop's rule judges each
    version once, so the rollback holds until a newer version is stored."""
    key = family.store_key(name)
    found = [v for v in family.store.versions(key) if v.registry_version == version] if key else []
    if not found:
        raise LookupError(f"no stored {family.name} model is version {version} of {name} in the registry "
                          f"({family.store.root}; a loop that refits every run keeps its newest {KEEP_REFITS}); "
                          f"`focuscrawl models` lists the versions")
    family.store.make_champion(found[0])
    if family.on_champion is not None:
        family.on_champion(family.store, found[0])
    registry.set_champion(name, version)
    return found[0]


def _copy_to_live_path(cfg: Settings) -> Callable[[ModelStore, ModelVersion], None]:
    """A rollback of a project's reference or candidate classifier: its file goes where the choosers and the
    classifier process load it at start (``$FOCUSCRAWL_VAR/models/<project>/{reference,candidate}.joblib``), and its
    version is named on the control topic (a ``promote`` command, in ``control_audit`` too), which the running ones
    follow (:class:`focuscrawl.fue.champion.ChampionFollower`). With Kafka down the running ones keep theirs until
    their next start, as the warning says."""
    def copy(store: ModelStore, meta: ModelVersion) -> None:
        import logging
        import shutil

        from focuscrawl import control

        project, _, role = meta.name.rpartition("/")
        if project != "pseudo" and role in control.CLASSIFIED["fue"]:
            live = Path(cfg.var_dir) / "models" / project / f"{role}.joblib"
            shutil.copyfile(store.folder(meta) / "model.joblib", f"{live}.tmp")
            Path(f"{live}.tmp").replace(live)
            try:
                control.send(cfg.kafka_bootstrap, [control.Command("promote", "fue", meta.name, meta.version)])
            except Exception as exc:  # noqa: BLE001 - the rollback stands; only the running processes miss it
                logging.getLogger(__name__).warning(
                    "the running FUE processes were not told of %s v%d: cannot reach Kafka at %s (%s: %s); they load "
                    "it at their next start (`focuscrawl services up --only kafka` brings the broker back)",
                    meta.name, meta.version, cfg.kafka_bootstrap, type(exc).__name__, exc)
    return copy


def family(cfg: Settings, name: str) -> ModelFamily | None:
    """The family ``name`` (one of :data:`FAMILIES`); None for ``pages`` without an active project."""
    from focuscrawl.outlinks.training import model_store
    from focuscrawl.outlinks.params import DEFAULT
    from focuscrawl.outlinks.schema import SCOPES

    if name == "outlinks":
        from focuscrawl.outlinks.tables import FEATURES

        keys = tuple(f"{m}/{s}" for m in DEFAULT.models for s in SCOPES)
        return ModelFamily("outlinks", model_store(cfg), keys=keys, data_table=FEATURES.name,
                           follows="the next outlinks_train score run scores and pushes with it")
    if name == "pages":
        from focuscrawl.orchestration.schedules import active_project
        from focuscrawl.relevance.train import page_store

        project = active_project(cfg).get("name")
        return None if not project else ModelFamily(
            f"pages.{project}", page_store(cfg, project),
            follows="the fetching processes load the new champion within 30 s")
    if name == "fue":
        from focuscrawl.fue.batch import held_out, model_store as fue_store
        from focuscrawl.orchestration.schedules import active_example_set

        return ModelFamily("fue", fue_store(cfg), on_champion=_copy_to_live_path(cfg),
                           held_out=partial(held_out, cfg, examples=partial(active_example_set, cfg)),
                           follows="a pseudo-trained method's next fue_pseudo_training run re-scores with it and "
                                   "pushes; a reference or candidate classifier is loaded within seconds by the FUE "
                                   "classifier process and the choosers, which rescore their candidates with it")
    if name == "sources":
        from focuscrawl.ephemeral.fitted import held_out, model_store as sources_store

        return ModelFamily("sources", sources_store(cfg), held_out=partial(held_out, cfg),
                           follows="the next source_schedule run plans with these estimates and pushes")
    raise ValueError(f"no model family {name!r}; the families are {', '.join(FAMILIES)}")


def families(cfg: Settings) -> list[ModelFamily]:
    """Every family there is now (``pages`` only with an active project)."""
    return [f for f in (family(cfg, n) for n in FAMILIES) if f is not None]


def owner(cfg: Settings, name: str) -> ModelFamily | None:
    """The family whose model the registry calls ``name``; None when no store holds it."""
    return next((f for f in families(cfg) if f.store_key(name) is not None), None)


__all__ = ["FAMILIES", "HELD_OUT_TAG", "ModelFamily", "families", "family", "mirror", "owner", "promote_registered"]
