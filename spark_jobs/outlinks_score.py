"""Job: outlink_features + champion model -> page_priorities (and the compacted page-priority topic).

    python spark_jobs/outlinks_score.py [--model NNL-ET_LBLA] [--scope int] [--publish]
"""

from __future__ import annotations

import argparse
import sys

from focuscrawl import lake
from focuscrawl.config import Settings, settings
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.outlinks.schema import SCOPES
from focuscrawl.outlinks.tables import FEATURES, PAGE_PRIORITIES, PAGE_PRIORITIES_TOPIC
from focuscrawl.outlinks.training import model_store, score_pages


def run(spark, cfg: Settings, model: str = DEFAULT.score_model, scope: str = DEFAULT.score_scope) -> int:
    scores = score_pages(lake.to_pandas(FEATURES, cfg), model_store(cfg), model, scope)
    lake.overwrite(spark.createDataFrame(scores), PAGE_PRIORITIES, cfg)
    return len(scores)


def publish(cfg: Settings) -> int:
    """Push every page's score to the compacted topic the revisitor follows."""
    from focuscrawl.topics.priority import publish_table

    return publish_table(PAGE_PRIORITIES.path(cfg), cfg.kafka_bootstrap, PAGE_PRIORITIES_TOPIC,
                         key_column="url", score_column="score")


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.lake.spark import get_session

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=DEFAULT.score_model, help="model spec of the champion that scores")
    ap.add_argument("--scope", default=DEFAULT.score_scope, choices=SCOPES)
    ap.add_argument("--publish", action="store_true", help="also push the scores to Kafka")
    args = ap.parse_args(argv)
    cfg = settings()
    n = run(get_session("outlinks_score", cfg=cfg), cfg, args.model, args.scope)
    print(f"outlinks_score: {n} pages -> {PAGE_PRIORITIES.path(cfg)}")
    if args.publish:
        print(f"outlinks_score: {publish(cfg)} scores -> {PAGE_PRIORITIES_TOPIC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
