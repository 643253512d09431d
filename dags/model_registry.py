"""# model_registry: every loop's new model versions recorded in MLflow, off the loops' runs

Runs when a loop pushed or stored a model: the revisitor's priorities (`outlinks_train`), a pseudo-trained FUE
method's scores (`fue_pseudo_training`), the source schedule (`source_schedule`), the page relevance models
(`page_relevance`). One task, `record`, for each model family in turn (`focuscrawl.orchestration.model_families`:
`outlinks`, `pages`, `fue`, also the reference and candidate classifiers `focuscrawl train` fits, and `sources`);
one family that fails spares the others. For each it logs every stored version the registry lacks (its files,
parameters, held-out metrics: the loop's, or measured here from the tables at the Delta versions it read for the FUE
refreshes and the source estimates; the Delta versions it read), registers it, and points the `champion` alias at
the store's champion, which the loop's own rule chose (set only when it moved).

No loop waits for it: recording a version takes several seconds of MLflow requests. A registry that is down
costs the record, never a loop: the task says so with the fix and succeeds; the next run records what this one
could not (the stores keep every version). docs/running.md#the-model-registry-mlflow.
"""

from __future__ import annotations

from airflow.sdk import AssetAny, dag

from assets import PAGE_MODELS, PAGE_PRIORITIES_PUSHED, SOURCE_SCHEDULE_PUSHED, fue_scores_pushed
from common import DEFAULT_ARGS, cfg, schedule
from focuscrawl.orchestration.model_families import FAMILIES
from focuscrawl.orchestration.registry_task import registry_task
from focuscrawl.orchestration.schedules import pseudo_methods

PUSHED = [PAGE_PRIORITIES_PUSHED, SOURCE_SCHEDULE_PUSHED, PAGE_MODELS, *(fue_scores_pushed(m) for m in pseudo_methods(cfg))]


@dag(
    dag_id="model_registry",
    doc_md=__doc__,
    schedule=schedule("model_registry", AssetAny(*PUSHED)),
    catchup=False,
    max_active_runs=1,
    tags=["focuscrawl", "models", "mlflow"],
    default_args=DEFAULT_ARGS,
)
def model_registry():
    registry_task(cfg, FAMILIES)


model_registry()
