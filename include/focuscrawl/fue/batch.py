"""The batch side of HCP with pseudo-training: Delta tables in, re-scored candidates out.

Seed 000 (*Real-time focused extraction of social media users*) section V: every five minutes the Model Trainer builds a new
prediction classifier from the original training set plus the extracted users pseudo-labelled
by the reference classifier, and the Batch Updater re-scores the best waiting candidates with it.
Here the original training set is the project's example users, the set its reference classifier was fitted on
(:func:`focuscrawl.fue.examples.example_set`: its example files' users plus those `focuscrawl examples add` added),
the extracted users and their verdicts come from the ``fue_extractions`` stats table, the
candidates' evidence from the crawled posts (``reddit_posts``), and the new scores go to the
``fue_candidate_scores`` table, from which the DAG pushes them to each method's compacted score
topic (``focuscrawl.fue.scores.<method>``) that the running choosers follow.

Plain Python over delta-rs (no JVM): the data of one run is small (thousands of users). A Spark
job would only pay off beyond a single machine's memory; the step itself stays
``focuscrawl.fue.pseudo.retrain_and_rescore``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable, Sequence

import pyarrow as pa

from focuscrawl.fue.classifier import TermCounts, UserClassifier, reference_params
from focuscrawl.fue.examples import ExampleSet, cached
from focuscrawl.fue.evidence import EvidenceAggregator, Post
from focuscrawl.fue.params import DEFAULT as FUE
from focuscrawl.fue.pipeline import STATS_TABLE, scores_topic
from focuscrawl.fue.pseudo import PseudoLabelling, retrain_and_rescore
from focuscrawl.lake.tables import Column, table

log = logging.getLogger(__name__)

CANDIDATE_SCORES_TABLE = table(
    "fue_candidate_scores",
    "Waiting candidate users re-scored by a pseudo-trained candidate classifier (seed 000, section V), "
    "one partition per method, replaced at every pseudo-training run and pushed to the method's score topic.",
    [
        Column("method", pa.string(), "pseudo-trained HCP variant (HCP-0.9-0.1, HCP-0.5-0.5, HCP-POS)", nullable=False),
        Column("user", pa.string(), "candidate user name", nullable=False),
        Column("score", pa.float64(), "new candidate-classifier probability (higher = extract sooner)", nullable=False),
        Column("extracted_users", pa.int64(), "extracted users whose verdicts were offered to pseudo-labelling"),
        Column("scored_at_ms", pa.int64(), "when the scores were computed, Unix epoch milliseconds"),
    ],
    partition_by=("method",),
    layer="gold",
)


def _read(uri: str, columns: list[str], filters=None, seen: dict[str, int] | None = None,
          version: int | None = None) -> list[dict]:
    """The rows of the table at ``uri`` (as of ``version``: None, the latest); ``seen`` gets the Delta version
    read, under the table's folder name."""
    from focuscrawl.lake import open_table

    table = open_table(uri, version=version)
    if table is not None and seen is not None:
        seen[Path(uri.rstrip("/")).name] = int(table.version())
    return [] if table is None else table.to_pyarrow_table(columns=columns, filters=filters).to_pylist()


def extracted_users(stats_uri: str, method: str, seen: dict[str, int] | None = None,
                    version: int | None = None) -> tuple[list[tuple[str, float]], set[str]]:
    """``(history text, reference probability)`` of the users ``method`` extracted (by the table's ``version``:
    None, the latest), and their names."""
    rows = _read(stats_uri, ["user", "history_text", "probability"], [("method", "=", method)], seen, version)
    return [(r["history_text"] or "", float(r["probability"])) for r in rows], {r["user"] for r in rows}


def candidate_evidence(posts_uri: str, exclude: set[str], seen: dict[str, int] | None = None) -> list[tuple[str, str]]:
    """``(user, evidence text)`` of every author in the crawled posts not extracted yet (the User Updater's view)."""
    evidence = EvidenceAggregator()
    for r in _read(posts_uri, ["name", "author", "created_utc", "score", "num_comments", "title", "selftext", "subreddit"],
                   seen=seen):
        if r["author"] not in exclude:
            evidence.add(Post(author=r["author"], created_utc=r["created_utc"], score=r["score"] or 0,
                              num_comments=r["num_comments"] or 0, title=r["title"] or "", text=r["selftext"] or "",
                              community=r["subreddit"] or "", post_id=r["name"]))
    return [(user, evidence.get(user).text) for user in evidence.users()]


def analysed(examples: ExampleSet, stop_words: str | None, cache_dir: Path | None) -> tuple[TermCounts, list[int]]:
    """The example set's whole-user documents (:meth:`ExampleSet.whole_users`) analysed into
    :class:`~focuscrawl.fue.classifier.TermCounts`, and their labels; read from ``cache_dir/fue`` when the same set was
    analysed before. Keyed by the set's digest (its files' fingerprint and its added users: ``ExampleSet.digest``), the
    stop words, scikit-learn's version, which fixes the analyser, and the form of the cached state
    (``TermCounts.STATE``). Every ``fue_pseudo_training`` run and the registry's held-out figures start from the
    project's example set, the same until it changes: analysing it (the world project's 486 eRisk users, 50 MB of
    text) is most of a retrain, and reading the users' writings back only to hash them was 3.3 s of a refresh's 16 s
    of CPU."""
    import hashlib

    import sklearn

    def analyse() -> tuple[TermCounts, list[int]]:
        documents, labels = examples.whole_users()
        counts = TermCounts(stop_words=stop_words)
        counts.add(documents)
        return counts, list(labels)

    if cache_dir is None:
        return analyse()
    key = hashlib.blake2b(f"{examples.digest}|{stop_words}|{sklearn.__version__}|{TermCounts.STATE}".encode(),
                          digest_size=16).hexdigest()
    return cached(Path(cache_dir), f"analysed-{key}.joblib", analyse)


def pseudo_training_run(method: str, originals: TermCounts, labels: Sequence[int], extracted: list[tuple[str, float]],
                        candidates: list[tuple[str, str]], current: UserClassifier | None,
                        top_n: int = FUE.top_n) -> tuple[UserClassifier, list[tuple[str, float]]]:
    """Retrain ``method``'s prediction classifier (the reference's hyper-parameters on the original whole-user set,
    analysed as ``originals`` with ``labels`` (:func:`analysed`), plus the pseudo-examples) and re-score the ``top_n``
    best candidates by ``current``. Each candidate's text is analysed once, shared by ``current``'s scores and the new
    model's (when ``current`` was analysed alike)."""
    params = reference_params(len(labels))
    texts = [text for _, text in candidates]
    if current is None or not texts:
        now = [0.0] * len(texts)
    elif current.stop_words == originals.stop_words:  # the run's own kind of model: one analysis of the texts
        now = current.predict_proba_counts(originals, texts)
    else:
        now = current.predict_proba(texts)
    return retrain_and_rescore(originals, labels, extracted, PseudoLabelling.for_method(method),
                               [(u, t, float(s)) for (u, t), s in zip(candidates, now)],
                               top_n=top_n, classifier_params=params)


def model_store(cfg) -> "ModelStore":
    """The FUE loop's model store (``$FOCUSCRAWL_VAR/models/fue``): ``<project>/reference`` and ``<project>/candidate``
    (``focuscrawl train``), ``pseudo/<method>`` (each pseudo-trained refresh)."""
    from focuscrawl.outlinks.store import ModelStore

    return ModelStore(Path(cfg.var_dir) / "models" / "fue")


def pseudo_key(method: str) -> str:
    return f"pseudo/{method}"


def refresh(cfg, method: str, top_n: int, posts_uri: str, examples: ExampleSet, stats_uri: str | None = None) -> dict:
    """One ``fue_pseudo_training`` run of ``method``: retrain from the champion refresh (the newest replaces it,
    judged once), store the new one as the next version of ``pseudo/<method>`` with its parameters and the Delta
    versions it read, and write its re-scored candidates. After a rollback (the champion is older than the
    newest, judged version) the champion re-scores and nothing is trained, until a newer version is promoted; a
    rollback made while this run trained holds too (``ModelStore.promote_newest``). ``examples`` is the original
    training set: the project's example set (:func:`focuscrawl.fue.examples.example_set`), which the stored version
    names as its reference and candidate classifiers' do (``examples.digest``; the Delta version of
    ``fue_example_users`` when users were added)."""
    from datetime import datetime, timezone

    from focuscrawl.outlinks.store import ModelVersion

    store, key = model_store(cfg), pseudo_key(method)
    champion = store.champion(key)
    current = store.load(key)[1] if champion is not None else None
    seen: dict[str, int] = {}
    extracted, done = extracted_users(stats_uri or STATS_TABLE.path(cfg), method, seen)
    candidates = candidate_evidence(posts_uri, exclude=done, seen=seen)

    def rescored_by(model) -> list[tuple[str, float]]:
        texts = [text for _, text in candidates]
        probabilities = model.predict_proba(texts) if texts else []
        return sorted(((u, float(p)) for (u, _), p in zip(candidates, probabilities)), key=lambda x: -x[1])[:top_n]

    if store.rolled_back(key) is not None:
        scores, kept = rescored_by(current), f"rolled back: v{champion.version} re-scored, none trained"
    else:
        originals, labels = analysed(examples, UserClassifier().stop_words, Path(cfg.var_dir))
        model, scores = pseudo_training_run(method, originals, labels, extracted, candidates, current, top_n)
        meta = store.register(ModelVersion(
            name=key, version=0, metrics={}, data_version=0, eval_period=0,
            delta_versions={**seen, **examples.delta_versions},
            created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            params={"method": method, "top_n": top_n, "originals": len(labels), **examples.params,
                    "extracted": len(extracted), "candidates": len(candidates),
                    "previous": champion.version if champion is not None else None}), model)
        promoted, why = store.promote_newest(meta, champion)
        kept = f"v{meta.version} trained"
        if not promoted:  # a rollback came during the run: the rolled-back champion's scores are pushed
            scores, kept = rescored_by(store.load(key)[1]), f"{kept}, not promoted: {why}; the champion re-scored"
    written = write_scores(CANDIDATE_SCORES_TABLE.path(cfg), method, scores, len(extracted))
    return {"method": method, "extracted": len(extracted), "candidates": len(candidates), "scored": written,
            "model": kept}


def refresh_and_publish(cfg, methods: Sequence[str], top_n: int, posts_uri: str, examples: ExampleSet) -> list[dict]:
    """One ``fue_pseudo_training`` run: for each of ``methods`` in turn, :func:`refresh`, then its scores as written
    (:func:`scores_push`) to its compacted topic (:func:`~focuscrawl.fue.pipeline.scores_topic`), which the running
    choosers follow. In one process: a process per step paid Airflow's task start, the DAG file's parse and these
    imports again (``bench/freshness.py``). A method that fails does not stop the others; the run raises after all
    were tried, naming each failure."""
    from focuscrawl.topics.priority import publish

    done, failed = [], {}
    for method in methods:
        try:
            summary = refresh(cfg, method, top_n, posts_uri, examples)
            summary["published"] = publish(cfg.kafka_bootstrap, scores_topic(method),
                                           scores_push(CANDIDATE_SCORES_TABLE.path(cfg), method))
        except Exception as exc:  # noqa: BLE001 - the others still run; all failures are raised below
            log.exception("fue_pseudo_training: %s failed", method)
            failed[method] = f"{type(exc).__name__}: {exc}"
            continue
        log.info("fue_pseudo_training: %s", summary)
        done.append(summary)
    if failed:
        raise RuntimeError(f"fue_pseudo_training: {len(failed)} of {len(methods)} methods failed "
                           f"({'; '.join(f'{m}: {e}' for m, e in failed.items())}); "
                           f"the others' scores were pushed: {[d['method'] for d in done]}")
    return done


def held_out(cfg, meta: "ModelVersion", examples: Callable[[], ExampleSet]) -> dict[str, float]:
    """The held-out figures of the refresh ``meta`` (:func:`focuscrawl.fue.evaluation.pseudo_cross_validated`), from
    what it was fitted on: the example set ``examples()`` gives (read only for a refresh; the registry passes the
    active project's), which must be the one the refresh names (``examples.digest``), and the users its method had
    extracted at the Delta version of ``fue_extractions`` it read. Empty for a refresh without that version or
    digest (stored before they were kept), or a reference or candidate classifier (``focuscrawl train`` measures
    those)."""
    from focuscrawl.fue.evaluation import pseudo_cross_validated

    version = meta.delta_versions.get(Path(STATS_TABLE.path(cfg).rstrip("/")).name)
    if not meta.name.startswith(pseudo_key("")) or version is None or "examples.digest" not in meta.params:
        return {}
    method, now = meta.params["method"], examples()
    if now.digest != meta.params["examples.digest"]:
        raise ValueError(f"{meta.name} v{meta.version} was trained on example set {meta.params['examples.digest']} "
                         f"and the project's is now {now.digest} (changed by `focuscrawl examples add` or its example "
                         "files since): its held-out figures would be another set's; the next fue_pseudo_training "
                         "run's refresh is measured on the new set")
    counts, labels = analysed(now, UserClassifier().stop_words, Path(cfg.var_dir))
    extracted, _ = extracted_users(STATS_TABLE.path(cfg), method, version=version)
    counts.add([text for text, _ in extracted])
    return pseudo_cross_validated(counts, labels, range(len(labels), len(counts)), PseudoLabelling.for_method(method))


def write_scores(uri: str, method: str, scores: list[tuple[str, float]], extracted_users: int) -> int:
    """Replace ``method``'s partition of the candidate-scores table."""
    from deltalake import write_deltalake

    from focuscrawl.lake import ensure_table

    ensure_table(uri, CANDIDATE_SCORES_TABLE)
    now = int(time.time() * 1000)
    rows = pa.Table.from_pylist(
        [{"method": method, "user": u, "score": s, "extracted_users": extracted_users, "scored_at_ms": now}
         for u, s in scores], schema=CANDIDATE_SCORES_TABLE.arrow_schema())
    write_deltalake(uri, rows, mode="overwrite", predicate=f"method = '{method}'")
    return len(scores)


def read_scores(uri: str, method: str) -> list[tuple[str, float]]:
    return [(r["user"], float(r["score"])) for r in _read(uri, ["user", "score"], [("method", "=", method)])]


def scores_push(uri: str, method: str) -> list[tuple[str, float, dict]]:
    """``method``'s latest scores as a push (:func:`focuscrawl.topics.priority.publish`): each names the model
    that made it, ``candidate-classifier/<method>`` (its pseudo-trained refresh), and as its version the Delta
    version of the candidate-scores table the scores are read at, so a landed extraction's
    ``chosen_by_model_version`` finds them again (``VERSION AS OF``)."""
    from deltalake import DeltaTable

    table = DeltaTable(uri)  # the scores and the version from one snapshot of the table
    named = {"method": method, "model": f"candidate-classifier/{method}", "model_version": int(table.version())}
    rows = table.to_pyarrow_table(columns=["user", "score"], filters=[("method", "=", method)]).to_pylist()
    return [(r["user"], float(r["score"]), named) for r in rows]


__all__ = ["CANDIDATE_SCORES_TABLE", "STATS_TABLE", "candidate_evidence", "extracted_users", "held_out", "model_store",
           "pseudo_key", "pseudo_training_run", "read_scores", "refresh", "refresh_and_publish", "scores_push",
           "write_scores"]
