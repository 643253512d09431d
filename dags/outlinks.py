"""# outlinks: which known page to revisit for new outlinks (look back, look around)

Seed 002 ("Look back, look around"); docs/loops/outlinks.md. Two data-aware DAGs:

**outlinks_features** runs when the revisitor's `page_snapshots` table changes:
1. `quality_page_snapshots`: the table's Great Expectations suite, derived from its spec
   (`focuscrawl.lake.quality.gx_gate`, keyed on url and period; fails the run and says why);
2. `features`: four Spark jobs in one task on the warm Spark (`spark_jobs/chain.py`; each on pandas in the
   task's process while its input is at most `FOCUSCRAWL_SPARK_IN_PROCESS_MIB` of Parquet,
   `focuscrawl.lake.spark.in_process`), in order, after
   `spark_jobs/outlinks_ready.py`, which skips the task while no model could use the features yet (a young
   crawl's snapshots span fewer periods than the first model trains on, `history_size` + 3, and none is
   trained):
   - `spark_jobs/outlinks_embed.py`: TF-IDF + LSA vector per page -> `page_embeddings`;
   - `spark_jobs/outlinks_related.py`: the k=30 most similar pages on FAISS (a registered method:
     exact `EXACT`, approximate `HNSW` or `IVF`) -> `related_pages`;
   - `spark_jobs/outlinks_features.py`: targets (NNL, NL, LCR) and LBLA features -> `outlink_features`;
     `target` (the project's `[loops.revisits] target`) says which new outlinks count: all of them, or with
     `new_relevant_outlinks` those about the page focus (judged by the active project's page model);
   - `spark_jobs/near_duplicates.py`: MinHash + LSH over each page's latest text, pairs at shingle
     Jaccard >= the threshold with their clusters -> `near_duplicates` (`focuscrawl.core.dedup`).

Their Params' defaults are `focuscrawl.outlinks.params.OutlinksParams` (`method`: the project's
`[loops.revisits] related`).

**outlinks_train** runs when `outlink_features` changes:
1. `quality_outlink_features`: the same gate on the feature table, beside `train` (its 20-30 s would
   otherwise delay every push; a failing table still stops the run before `score`);
2. `train` (`spark_jobs/outlinks_train.py --no-promote`): ExtraTrees/NGBoost versions, evaluated on
   the held-out period, stored with the feature table's Delta version -> `outlink_models`; skipped (and the
   tasks after it) until the table holds two labelled periods;
3. `score` (`spark_jobs/outlinks_score.py --promote --publish`): each model's newest version becomes
   the champion only when not worse on the held-out period (judged once: a rollback, `focuscrawl models
   promote`, holds until a newer version is trained); then the champion,
   new or kept, scores the latest period -> `page_priorities` and the compacted `focuscrawl.page_priorities`
   topic the revisitor follows. It scores whatever was promoted: new features are a new period to rank, so a run
   that promoted nothing still pushes.

The push starts the `model_registry` DAG, which records the new versions in MLflow outside this run.
"""

from __future__ import annotations

from dataclasses import replace

from airflow.sdk import dag

from assets import EMBEDDINGS as EMBEDDINGS_ASSET
from assets import NEAR_DUPLICATES as NEAR_DUPLICATES_ASSET
from assets import OUTLINK_FEATURES as FEATURES_ASSET
from assets import OUTLINK_MODELS as MODELS_ASSET
from assets import PAGE_PRIORITIES as PRIORITIES_ASSET
from assets import PAGE_PRIORITIES_PUSHED as PRIORITIES_PUSHED
from assets import RELATED_PAGES as RELATED_ASSET
from assets import SNAPSHOTS as SNAPSHOTS_ASSET
from common import DEFAULT_ARGS, cfg, dag_params, schedule, spark_chain, spark_job
from focuscrawl.orchestration.schedules import loop_setting
from focuscrawl.platform.train import active_relevance_args
from focuscrawl.core.dedup import DEFAULT as NEAR_DUPLICATE_DEFAULTS
from focuscrawl.outlinks.params import DEFAULT, FEATURE_KNOBS, RELATED_KNOBS, TRAIN_KNOBS
from focuscrawl.outlinks.related import RELATED
from focuscrawl.core.params import cli_args
from focuscrawl.outlinks.tables import FEATURES, SNAPSHOTS
from focuscrawl.orchestration.quality_gate import gx_gate
from focuscrawl.services.airflow import DEFAULT_POOL

# A page is snapshotted once per period; a feature row is one page and target period.
PAGE_PERIOD = ("url", "period")
PARAMS = replace(DEFAULT, method=loop_setting(cfg, "revisits", "related", DEFAULT.method),
                 target=loop_setting(cfg, "revisits", "target", DEFAULT.target))
# The page focus the live processes score with (model store, threshold): new_relevant_outlinks judges links by it.
RELEVANCE_ARGS = active_relevance_args(cfg)


@dag(
    dag_id="outlinks_features",
    doc_md=__doc__,
    schedule=schedule("outlinks_features", [SNAPSHOTS_ASSET]),
    catchup=False,
    max_active_runs=1,
    tags=["focuscrawl", "outlinks", "seed-002"],
    default_args=DEFAULT_ARGS,
    params={
        **dag_params(PARAMS, ("dimensions", *RELATED_KNOBS, *FEATURE_KNOBS), bounds={"method": {"enum": RELATED.names()}}),
        # named apart from the other knobs of this DAG: a bare "threshold" would not say of what
        "near_duplicate_threshold": dag_params(NEAR_DUPLICATE_DEFAULTS, ("threshold",))["threshold"],
    },
)
def outlinks_features():
    features = spark_chain("features", [
        ("outlinks_ready.py", cli_args(["history_size"])),
        ("outlinks_embed.py", cli_args(["dimensions"])),
        ("outlinks_related.py", cli_args(RELATED_KNOBS)),
        ("outlinks_features.py", [*cli_args(FEATURE_KNOBS), *RELEVANCE_ARGS]),
        ("near_duplicates.py", ["--threshold", "{{ params.near_duplicate_threshold }}"]),
    ], inlets=[SNAPSHOTS_ASSET], outlets=[EMBEDDINGS_ASSET, RELATED_ASSET, FEATURES_ASSET, NEAR_DUPLICATES_ASSET])
    gx_gate(SNAPSHOTS, PAGE_PERIOD)() >> features


@dag(
    dag_id="outlinks_train",
    doc_md=__doc__,
    schedule=schedule("outlinks_train", [FEATURES_ASSET]),
    catchup=False,
    max_active_runs=1,
    tags=["focuscrawl", "outlinks", "seed-002"],
    default_args=DEFAULT_ARGS,
    params={
        **dag_params(PARAMS, (*TRAIN_KNOBS, "score_model", "score_scope")),
    },
)
def outlinks_train():
    # train fits in its own process and appends with delta-rs, never a Spark session: no spark slot, which its fits
    # held for 100-200 s a run in the loaded freshness run at 6afc487 while source_schedule and graph_estimation queued.
    train = spark_job("train", "outlinks_train.py", [*cli_args(TRAIN_KNOBS), "--no-promote"],
                      inlets=[FEATURES_ASSET], outlets=[MODELS_ASSET], pool=DEFAULT_POOL)
    score = spark_job("score", "outlinks_score.py", ["--models", "{{ params.models }}", "--promote",
                                                     "--model", "{{ params.score_model }}",
                                                     "--scope", "{{ params.score_scope }}", "--publish"],
                      inlets=[FEATURES_ASSET, MODELS_ASSET], outlets=[PRIORITIES_ASSET, PRIORITIES_PUSHED])
    [gx_gate(FEATURES, PAGE_PERIOD)(), train] >> score


outlinks_features()
outlinks_train()
