"""``focuscrawl train [PROJECT]``: the classifiers a project's FUE loop needs, from its own examples
(and its page relevance model, from its example pages: ``focuscrawl.relevance.train``).

Seed 000 (*Real-time focused extraction of social media users*) sections IV-E/IV-F: the reference classifier (L1 logistic
regression on whole user histories, the paper's hyper-parameters scaled to the set's size) judges
extracted users; the prediction (candidate) classifier scores partial evidence. HCP scores with
the reference model itself ("these two classifiers are the same"); HCP-SNIP's model is trained on
short snippets of the same users. Both are trained on the project's example set
(:func:`focuscrawl.fue.examples.example_set`: the users of ``[profile] positives/negatives`` plus those `focuscrawl
examples add` added while a crawl ran; its pseudo-trained refreshes start from the same set) and stored where the
chooser and classifier processes load them: ``$FOCUSCRAWL_VAR/models/<project>/{reference,candidate}.joblib``. A ``trained.json`` beside
them records what they were trained on; unchanged examples are not trained twice.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from focuscrawl.platform.plan import Models

ROLES = ("reference", "candidate")


def model_paths(project, cfg) -> Models:
    """Where ``project``'s models are kept (whether trained yet or not)."""
    out = Path(cfg.var_dir) / "models" / project.name
    return Models(out / "reference.joblib", out / "candidate.joblib")


def train_models(project, cfg, *, force: bool = False, log=print) -> Models:
    """Train (or reuse) the reference and candidate classifiers of ``project``; their paths."""
    from focuscrawl.core.status_file import read_status, write_status
    from focuscrawl.fue.examples import example_set

    models = model_paths(project, cfg)
    out = models.reference.parent
    stamp = out / "trained.json"
    examples = example_set(project, cfg)
    added, fingerprint = examples.added, examples.fingerprint
    lineage, delta_versions = examples.params, examples.delta_versions
    with_added = (f"; with {len(added.rows)} example users added by `focuscrawl examples add` ({added.counts()}, "
                  f"fue_example_users v{added.delta_version})" if added.rows else "")
    if (not force and models.reference.exists() and models.candidate.exists()
            and read_status(stamp).get("fingerprint") == fingerprint):
        log(f"train: models of {project.name} are up to date ({out}{with_added})")
        from focuscrawl.fue.batch import model_store

        if not model_store(cfg).versions(f"{project.name}/reference"):  # trained before the store kept versions
            from focuscrawl.fue.classifier import UserClassifier

            done = read_status(stamp)
            store_versions(project, cfg, {"reference": UserClassifier.load(models.reference),
                                          "candidate": UserClassifier.load(models.candidate)},
                           {"users": done.get("users"), "positives": done.get("positives"),
                            **{f"reference.{k}": v for k, v in (done.get("reference_params") or {}).items()},
                            **lineage}, delta_versions=delta_versions)
        return models
    from focuscrawl.fue.batch import analysed
    from focuscrawl.fue.classifier import UserClassifier, reference_params, train_candidate_classifier
    from focuscrawl.fue.evaluation import cross_validated

    started = time.monotonic()
    histories, labels = examples.users
    positives = sum(labels)
    if positives == 0 or positives == len(labels):
        raise ValueError("profile: the examples hold one class only; give both positive and negative users")
    log(f"train: {len(labels)} example users ({positives} positive{with_added}) read in "
        f"{time.monotonic() - started:.1f}s")
    params = reference_params(len(histories))
    # every user's whole history analysed once: the reference's fit and the folds' scores; kept where every
    # fue_pseudo_training refresh reads it (without it the first refresh analysed them again: 84 s on the loaded
    # platform, the second 31 s with three times the candidates; bench/freshness.py at 8983feb)
    counts, _ = analysed(examples, UserClassifier().stop_words, Path(cfg.var_dir))
    try:
        reference = UserClassifier(**params).fit_counts(counts, labels)  # = train_reference_classifier
        candidate = train_candidate_classifier(histories, labels)
    except ValueError as exc:  # scikit-learn: e.g. no term left after min_df on a tiny set
        raise ValueError(f"profile: the classifiers cannot be trained on these {len(labels)} example users ({exc}); "
                         "give more example users with more writings") from None
    fitted = time.monotonic()
    held_out = {  # each fold fitted as the stored model is, with the hyper-parameters its size gives
        "reference": cross_validated(lambda rows: UserClassifier(**reference_params(len(rows))).fit_counts(
            counts, [labels[i] for i in rows], rows), counts, labels),
        "candidate": cross_validated(lambda rows: train_candidate_classifier(
            [histories[i] for i in rows], [labels[i] for i in rows]), counts, labels)}
    for role, figures in held_out.items():
        log(f"train: {role} classifier, cross-validated AUC " + (
            f"{figures['cv_auc']:.3f} [{figures['cv_auc_low']:.3f}, {figures['cv_auc_high']:.3f}] over "
            f"{figures['cv_folds']:.0f} folds" if figures else "not measured: too few users (or words) per fold")
            + f" ({time.monotonic() - fitted:.1f}s)")
    reference.save(models.reference)
    candidate.save(models.candidate)
    write_status(stamp, {"fingerprint": fingerprint, "users": len(labels), "positives": positives,
                         "reference_params": params, "trained_at": time.time()})
    store_versions(project, cfg, {"reference": reference, "candidate": candidate},
                   {"users": len(labels), "positives": positives, "negatives": len(labels) - positives,
                    **{f"reference.{k}": v for k, v in params.items()}, **lineage}, held_out, delta_versions)
    log(f"train: reference and candidate classifiers in {out} ({time.monotonic() - started:.1f}s)")
    return models


def store_versions(project, cfg, fitted: dict, params: dict, metrics: dict | None = None,
                   delta_versions: dict[str, int] | None = None) -> None:
    """Each of ``fitted`` (``{"reference": ..., "candidate": ...}``) as the next version of ``<project>/<role>`` in the
    FUE model store (:func:`focuscrawl.fue.batch.model_store`) and its champion, the model registry's record, with
    its ``metrics`` by role. The classifiers are fitted on every example user, so their held-out figures are
    cross-validated (:mod:`focuscrawl.fue.evaluation`); their data are the example files, named in ``params``, and
    the users added to them, whose table's Delta version is in ``delta_versions``."""
    from datetime import datetime, timezone

    from focuscrawl.fue.batch import model_store
    from focuscrawl.outlinks.store import ModelVersion

    store = model_store(cfg)
    for role, model in fitted.items():
        champion = store.champion(f"{project.name}/{role}")  # `train` is the operator's: its fit replaces any
        meta = store.register(ModelVersion(name=f"{project.name}/{role}", version=0,
                                           metrics=(metrics or {}).get(role, {}), data_version=0,
                                           eval_period=0, params={"role": role, **params},
                                           delta_versions=dict(delta_versions or {}),
                                           created_at=datetime.now(timezone.utc).isoformat(timespec="seconds")), model)
        store.promote_newest(meta, champion)


def main_train(args, cfg) -> int:
    """``focuscrawl train [PROJECT] [--force]`` (parser in ``focuscrawl.platform.commands``): the FUE
    classifiers from the example users, and the page relevance model (``focuscrawl.relevance.train``)
    from the example pages, whichever the profile declares."""
    import sys

    from focuscrawl.project.loading import load_project
    from focuscrawl.project.values import ProjectError

    out = {}
    try:
        project = load_project(args.project)
        if project.profile.positives is not None or project.profile.pages is None:
            models = train_models(project, cfg, force=args.force)
            out.update({"reference": str(models.reference), "candidate": str(models.candidate)})
        if project.profile.pages is not None:
            from focuscrawl.relevance.train import train_page_model

            out["page_relevance"] = train_page_model(project, cfg).to_json()
    except (ProjectError, ValueError) as exc:
        print(f"focuscrawl train: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


def active_relevance_args(cfg) -> list[str]:
    """The page focus flags of the project ``focuscrawl up`` made active (the ones its fetching processes
    were given: model store, model, threshold, languages), for a DAG task that judges pages or links by
    it; none without an active project or without ``[profile.pages]``."""
    from focuscrawl.orchestration.schedules import running_project
    from focuscrawl.platform.plan import _relevance

    project = running_project(cfg)
    if project is None or project.profile.pages is None:
        return []
    return _relevance(project, cfg)


def train_active_project(cfg, log=print) -> dict:
    """The ``page_relevance`` DAG's task: :func:`focuscrawl.relevance.train.train_page_model` on the project ``focuscrawl up`` made
    active; ``{"skipped": why}`` when there is none or it declares no example pages."""
    from focuscrawl.orchestration.schedules import running_project
    from focuscrawl.relevance.train import train_page_model

    project = running_project(cfg)
    if project is None:
        log("page_relevance: no active project (focuscrawl up writes one); nothing to refit")
        return {"skipped": "no active project"}
    if project.profile.pages is None:
        log(f"page_relevance: project {project.name} declares no [profile.pages]; nothing to refit")
        return {"skipped": "no example pages"}
    return train_page_model(project, cfg, log=log).to_json()
