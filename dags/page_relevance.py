"""# page_relevance: refit the page relevance model from the project's example pages

One task, **train**, runs `focuscrawl.relevance.train.train_page_model` on the active project (the one
`focuscrawl up` wrote to `$FOCUSCRAWL_VAR/run/project.json`), as `focuscrawl train` does:

1. the example pages of `[profile.pages]` are read again: URLs fetched once each through the site's
   fetch layer (its User-Agent, politeness, robots.txt), so a page that changed is learned as it is now;
2. the project's registered model (`TFIDF-LR`, `LSA-LR`, ...) is fitted on a split that never shares a
   page with its held-out pages, and measured there: AUC and precision at the operating threshold,
   each with a bootstrap interval;
3. the fitted model is the next version under `$FOCUSCRAWL_VAR/models/<project>/pages/<MODEL>/`, promoted
   to champion when its held-out AUC is not worse than the champion's (its `models.pages` Asset starts the
   `model_registry` DAG, which records the version in MLflow).

A project without `[profile.pages]` (or no active project) has nothing to refit: the task says so and
succeeds. Its XCom is the version's figures. The schedule is the project's `[schedules] page_relevance`
(daily by default).
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag, task

from assets import PAGE_MODELS
from common import DEFAULT_ARGS, cfg, schedule


@dag(
    dag_id="page_relevance",
    doc_md=__doc__,
    schedule=schedule("page_relevance"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=1),
    tags=["focuscrawl", "relevance", "training"],
    default_args={**DEFAULT_ARGS, "execution_timeout": timedelta(minutes=30)},
)
def page_relevance():
    @task(outlets=[PAGE_MODELS])
    def train() -> dict:
        from focuscrawl.platform.train import train_active_project

        return train_active_project(cfg)

    train()


page_relevance()
