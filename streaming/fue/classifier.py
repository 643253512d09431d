"""User Classifier process (seed 000, section III): extracted histories -> verdicts (stats events) topic.

    python streaming/fue/classifier.py --reference var/fue/reference.joblib --run-id live

The reference classifier (L1 logistic regression, threshold 0.9) judges each whole history;
the simulated time of the verdict is read from the world's clock (``--eval-url``, measurement
only, never on the crawl path). ``streaming/fue/stats_sink.py`` writes the events to Delta.
"""

from __future__ import annotations

import argparse
import logging
import sys

import requests

from focuscrawl.config import settings
from focuscrawl.fue import UserClassifier
from focuscrawl.fue.pipeline import HISTORIES_TOPIC, STATS_TOPIC, History, ReferenceJudge

from stage import run_stage, stop_on_signals


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", required=True, help="reference classifier (joblib, UserClassifier.save)")
    ap.add_argument("--run-id", default="live")
    ap.add_argument("--eval-url", default=cfg.world_eval_url)
    ap.add_argument("--bootstrap", default=cfg.kafka_bootstrap)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    judge = ReferenceJudge(UserClassifier.load(args.reference))
    clock = requests.get(f"{args.eval_url}/time", timeout=10).json()
    start = float(clock["sim_now"])

    def handle(record):
        history = History.from_json(record.value)
        now = float(requests.get(f"{args.eval_url}/time", timeout=10).json()["sim_now"])
        event = judge.judge(history, run_id=args.run_id, method=history.method, sim_time=now - start, sim_epoch=now)
        yield STATS_TOPIC, history.user, event.to_json()

    run_stage(args.bootstrap, [HISTORIES_TOPIC], "fue-classifier", handle, stop_on_signals())
    return 0


if __name__ == "__main__":
    sys.exit(main())
