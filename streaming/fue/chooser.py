"""User Updater + User Chooser process (seed 000, section III): posts -> evidence -> ranked users -> extract topic.

    python streaming/fue/chooser.py --method HCP --classifier var/fue/candidate.joblib

A member of group ``fue-chooser-<method>`` on the posts topic (keyed by author, so each user's
evidence lives in exactly one instance). It keeps ``--lead`` chosen users in flight: each is
published once to ``focuscrawl.fue.extract.<method>`` (keyed by user, so extractors of that group
each get unique users) and marked processed; verdicts on the stats topic free a slot and feed
adaptive methods. Scores pushed to the compacted ``focuscrawl.fue.scores.<method>`` topic
(pseudo-training, ``dags/fue_pseudo_training.py``) re-rank the waiting candidates without a restart.
``--status-file`` (JSON: candidates, chosen, pushed scores applied, the current top five) lets
operators and tests watch the order change.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
from pathlib import Path

from focuscrawl.config import settings
from focuscrawl.fue import RANKING_METHODS, UserChooser, UserClassifier
from focuscrawl.fue.pipeline import EXTRACT_TOPIC, POSTS_TOPIC, SCORES_TOPIC, STATS_TOPIC, post_from_json
from focuscrawl.priority_topic import PriorityFollower
from focuscrawl.status import write_status

from stage import run_stage, stop_on_signals

log = logging.getLogger("focuscrawl.fue.chooser")


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", required=True, choices=RANKING_METHODS.names())
    ap.add_argument("--classifier", help="candidate classifier (joblib, UserClassifier.save) for HCP-like methods")
    ap.add_argument("--bootstrap", default=cfg.kafka_bootstrap)
    ap.add_argument("--lead", type=int, default=8, help="chosen users in flight (about one per extractor)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--status-file", type=Path, help="where to keep a JSON snapshot of the chooser's state")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    classifier = UserClassifier.load(args.classifier) if args.classifier else None
    chooser = UserChooser(RANKING_METHODS.create(args.method, classifier=classifier, seed=args.seed))
    lock = threading.Lock()  # the follower thread and the stage loop share the chooser
    in_flight: set[str] = set()
    extract_topic = f"{EXTRACT_TOPIC}.{args.method}"
    counts = {"chosen": 0, "scores_applied": 0}
    last_status: dict = {}

    def apply_score(user: str, score: float | None) -> None:
        if score is not None:
            with lock:
                counts["scores_applied"] += chooser.set_scores([(user, score)])

    def report() -> None:
        nonlocal last_status
        with lock:
            status = {"method": args.method, "candidates": len(chooser), "in_flight": sorted(in_flight), **counts,
                      "top": chooser.top(5)}
        if status != last_status:
            write_status(args.status_file, status)
            last_status = status

    def handle(record):
        if record.topic == POSTS_TOPIC:
            with lock:
                chooser.add_posts([post_from_json(record.value)])
        else:
            verdict = json.loads(record.value)
            if verdict["method"] == args.method and verdict["user"] in in_flight:
                in_flight.discard(verdict["user"])
                with lock:
                    chooser.feedback(verdict["user"], bool(verdict["relevant"]))
        return ()

    def choose():
        while len(in_flight) < args.lead:
            with lock:
                user = chooser.choose()
            if user is None:
                return
            in_flight.add(user)
            counts["chosen"] += 1
            yield extract_topic, user, json.dumps({"user": user, "method": args.method}).encode()

    def idle():
        yield from choose()
        if args.status_file is not None:
            report()

    stopping = stop_on_signals()
    follower = PriorityFollower(args.bootstrap, f"{SCORES_TOPIC}.{args.method}", apply_score)
    follower.start()
    log.info("choosing users by %s into %s", args.method, extract_topic)
    try:
        run_stage(args.bootstrap, [POSTS_TOPIC, STATS_TOPIC], f"fue-chooser-{args.method}", handle, stopping, idle=idle)
    finally:
        follower.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
