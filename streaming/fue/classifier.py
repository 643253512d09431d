"""User Classifier process (seed 000, section III): extracted histories -> verdicts (stats events) topic.

    python streaming/fue/classifier.py --reference var/fue/reference.joblib --run-id live

The reference classifier (L1 logistic regression, threshold 0.9) judges each whole history. The
verdict is timed by the records (``focuscrawl.fue.pipeline.VerdictTimes``): the site time the
history was read at, which the extractor took from the ``Date`` of the site's last response (else
the newest item's ``created_utc``); ``--run-start`` is the site time the run's clock counts from
(default: the first history judged). Nothing here reads the world's evaluation interface.
``streaming/fue/stats_sink.py`` writes the events to Delta.
"""

from __future__ import annotations

import argparse
import logging
import sys

from focuscrawl.config import settings
from focuscrawl.fue import UserClassifier
from focuscrawl.fue.pipeline import HISTORIES_TOPIC, STATS_TOPIC, History, ReferenceJudge, VerdictTimes

from stage import run_stage, stop_on_signals


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", required=True, help="reference classifier (joblib, UserClassifier.save)")
    ap.add_argument("--run-id", default="live")
    ap.add_argument("--run-start", type=float, default=None,
                    help="site time (Unix seconds) the run's sim_time counts from (default: the first history judged)")
    ap.add_argument("--bootstrap", default=cfg.kafka_bootstrap)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    judge = ReferenceJudge(UserClassifier.load(args.reference))
    times = VerdictTimes(args.run_start)

    def handle(record):
        history = History.from_json(record.value)
        sim_time, sim_epoch = times(history)
        event = judge.judge(history, run_id=args.run_id, method=history.method, sim_time=sim_time, sim_epoch=sim_epoch)
        yield STATS_TOPIC, history.user, event.to_json()

    run_stage(args.bootstrap, [HISTORIES_TOPIC], "fue-classifier", handle, stop_on_signals())
    return 0


if __name__ == "__main__":
    sys.exit(main())
