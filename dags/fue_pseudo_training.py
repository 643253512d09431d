"""# fue_pseudo_training: HCP with pseudo-training, pushed to the running user choosers

Seed 000 (*Real-time focused extraction of social media users*) section V: every five minutes (the active project's
`[schedules] fue_pseudo_training`), for each pseudo-trained HCP variant the project's FUE loop
runs (`HCP-0.9-0.1`, `HCP-0.5-0.5`, `HCP-POS`; all three without a project):

One task, **refresh**, for each variant in turn (a task process per step would pay Airflow's start, a parse of this
file and the imports again: in the loaded freshness run at ae4f803, `bench/freshness.py`, a task that only listed
the methods took 35 s before the first retrain started):

1. *retrain*: a new candidate classifier from the original training set (one whole-user document
   per example user of the active project, the set its reference classifier was fitted on: its `[profile]
   positives/negatives` plus the users `focuscrawl examples add` added, `focuscrawl.fue.examples.example_set`; a
   run without an active project fails, naming `focuscrawl up`) plus the users the variant extracted, labelled by
   the reference classifier's verdicts in `fue_extractions`; the waiting candidates (authors of
   the FUE loop's own landed posts in `reddit_posts`, not extracted yet) are re-scored, the best `top_n` by the previous model first,
   into `fue_candidate_scores` (`focuscrawl.fue.batch.refresh`, plain delta-rs: one run's data is small). Each
   refresh is the next version of `pseudo/<method>` in the FUE model store (`$FOCUSCRAWL_VAR/models/fue`) and its
   champion (the newest replaces the last); after a rollback (`focuscrawl models promote`) the champion
   re-scores and nothing is trained until a newer version is promoted. Its parameters name the example set
   (`examples.digest`, and the Delta version of `fue_example_users` when users were added), as the reference's do.
   The `model_registry` DAG records it.
2. *publish*: the variant's new scores, as written, go to its compacted topic `focuscrawl.fue.scores.<method>`;
   the running choosers (`streaming/fue/chooser.py`) follow it and re-rank without a restart.

A variant that fails does not stop the others; the task fails after all were tried, naming it, and its retry
refreshes every variant again.

A variant with no new pseudo-example since its last model still re-scores (new candidates keep
arriving). Params: `methods`, `top_n` (the paper's Batch Updater: 50,000); their defaults are
`focuscrawl.fue.params.FueParams`.

**Schedule and simulated time.** The schedule is 5 minutes of wall-clock time: the paper's period
against a real site, or a world served at `--speedup 1`. The world's default speedup is 60
simulated seconds per wall second, so there a run comes every 5 *simulated hours*; a 5-simulated-
minute period would need a run every 5 wall seconds, shorter than one retrain. The offline
comparison (`focuscrawl experiment fue`) does the paper's period in simulated time instead: it
retrains in lock-step with the world's clock every `--pseudo-every` (5 simulated minutes; at the
first step boundary after it, so every step with `--step 10m`).
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Param, dag, task

from assets import CANDIDATE_SCORES, EXTRACTIONS, POSTS, fue_scores_pushed
from common import DEFAULT_ARGS, cfg, dag_params, schedule
from focuscrawl.crawl.listing_crawler import POSTS_TABLE
from focuscrawl.orchestration.schedules import pseudo_methods
from focuscrawl.fue.params import DEFAULT as FUE, PSEUDO_TRAINING_KNOBS

PSEUDO_METHODS = pseudo_methods(cfg)
SCORES_PUSHED = [fue_scores_pushed(m) for m in PSEUDO_METHODS]


@dag(
    dag_id="fue_pseudo_training",
    doc_md=__doc__,
    schedule=schedule("fue_pseudo_training"),
    catchup=False,
    max_active_runs=1,
    tags=["focuscrawl", "fue", "pseudo-training", "priorities"],
    # Not the period: a run outlasting its slot only delays the next one (max_active_runs=1). On two
    # loaded cores one retrain took 2 min 11 s and the run as a whole more than 5 (load average 46).
    default_args={**DEFAULT_ARGS, "execution_timeout": timedelta(minutes=15)},
    dagrun_timeout=timedelta(minutes=30),
    params={
        "methods": Param(PSEUDO_METHODS, type="array", description="pseudo-trained HCP variants to refresh"),
        **dag_params(FUE, PSEUDO_TRAINING_KNOBS),
    },
)
def fue_pseudo_training():
    @task(inlets=[EXTRACTIONS, POSTS], outlets=[CANDIDATE_SCORES, *SCORES_PUSHED])
    def refresh(params=None) -> list[dict]:
        from focuscrawl.fue.batch import refresh_and_publish
        from focuscrawl.orchestration.schedules import active_example_set

        return refresh_and_publish(cfg, list(params["methods"]), int(params["top_n"]), POSTS_TABLE.path(cfg),
                                   active_example_set(cfg))

    refresh()


fue_pseudo_training()
