"""Job: outlink_features + champion model -> page_priorities (and the compacted page-priority topic).

    python spark_jobs/outlinks_score.py [--models NNL-ET_LBLA,NNL-NGB --promote] [--model NNL-ET_LBLA]
                                        [--scope int] [--publish]

``--promote`` first gives each of ``--models``' newest versions the champion's place when it is not worse
on the held-out period (``training.promote_latest``), so the scores come from the champion as it then is.
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.lake.spark import IN_PROCESS
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.outlinks.schema import SCOPES
from focuscrawl.outlinks.tables import FEATURES, PAGE_PRIORITIES, PAGE_PRIORITIES_TOPIC
from focuscrawl.outlinks.training import model_store, promote_latest, score_pages
from focuscrawl.core.params import add_arguments


def run(spark, cfg: Settings, model: str = DEFAULT.score_model, scope: str = DEFAULT.score_scope) -> int:
    """Scores the latest period on the driver and writes them with Spark, or with delta-rs when ``spark`` is None
    (a small lake, ``focuscrawl.lake.spark.in_process``: a Spark plan to write a few hundred rows costs seconds)."""
    scores = score_pages(lake.to_pandas(FEATURES, cfg), model_store(cfg), model, scope)
    if spark is None:
        return lake.replace_frame(scores, PAGE_PRIORITIES, cfg)
    lake.overwrite(spark.createDataFrame(scores), PAGE_PRIORITIES, cfg)
    return len(scores)


def publish(cfg: Settings) -> int:
    """Push every page's score to the compacted topic the revisitor follows."""
    from focuscrawl.topics.priority import publish_table

    return publish_table(PAGE_PRIORITIES.path(cfg), cfg.kafka_bootstrap, PAGE_PRIORITIES_TOPIC,
                         key_column="url", score_column="score")


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import get_session, in_process

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(ap, DEFAULT, ("models",))
    ap.add_argument("--promote", action="store_true",
                    help="first promote each of --models' newest versions when not worse than its champion")
    ap.add_argument("--model", default=DEFAULT.score_model, help="model spec of the champion that scores")
    ap.add_argument("--scope", default=DEFAULT.score_scope, choices=SCOPES)
    ap.add_argument("--publish", action="store_true", help="also push the scores to Kafka")
    args = ap.parse_args(argv)
    cfg = settings()
    if args.promote:
        for promotion in promote_latest(model_store(cfg), args.models.split(",")):
            print(f"outlinks_score: {promotion}")
    local = in_process(FEATURES, cfg)
    n = run(None if local else get_session("outlinks_score", cfg=cfg), cfg, args.model, args.scope)
    print(f"outlinks_score: {n} pages -> {PAGE_PRIORITIES.path(cfg)}{IN_PROCESS if local else ''}")
    if args.publish:
        print(f"outlinks_score: {publish(cfg)} scores -> {PAGE_PRIORITIES_TOPIC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
