"""User Updater + User Chooser process (seed 000, section III): posts -> evidence -> ranked users -> extract topic.

    python streaming/fue/chooser.py --method HCP --classifier var/fue/candidate.joblib

A member of group ``fue-chooser-<method>`` (``--group``) on the posts, stats and score topics (all
keyed by user and co-partitioned, so each user's evidence lives in exactly one instance). It keeps
``--lead`` chosen users in flight: each is published once to ``focuscrawl.fue.extract.<method>``
(``--extract-topic``; keyed by user, so extractors of that group each get unique users) and marked
processed; verdicts on the stats topic free a slot and feed adaptive methods. Scores pushed to the
compacted ``focuscrawl.fue.scores.<method>`` topic (pseudo-training, ``dags/fue_pseudo_training.py``)
re-rank the waiting candidates without a restart.

Restart-safe (``focuscrawl.topics.changelog``): every user's state (evidence, scores,
chosen, judged) is a record of the group's compacted changelog topic, written in one Kafka
transaction with the extract requests and the input offsets. On start, and on every partition
assignment, the chooser reads its changelog partitions to the end before consuming new input, so
after a SIGKILL it ranks as if it had never stopped and never extracts a processed user again.
Extract requests are transactional: read them with ``isolation_level="read_committed"``.
Any Kafka error in a transaction ends the process (exit 1) for the supervisor to restart it from the log.
Keeping up: HCP-like methods score each post from per-user term counts instead of
re-vectorising the author's whole text (``focuscrawl.fue.textscore``; the start-up log says which is on),
and the ranking takes an update in O(1) (``BlockFrontier``): ``bench/chooser_bench.py`` measures both.
``--status-file`` (JSON: candidates, chosen, pushed scores applied, the current top five) lets
operators and tests watch the order change; the candidate count goes to ``--metrics-port`` too
(``focuscrawl.stream.process``). With ``--model <project>/<role>`` (the classifier's name in the FUE model store)
it follows the control topic: a new champion (`focuscrawl examples add`, a rollback) rescores every waiting
candidate between two batches (``ChooserStage``), and the status file's ``classifier`` says which version is in use.
"""

from __future__ import annotations

import logging
import sys

from focuscrawl.topics.changelog import TransactionalStage
from focuscrawl.config import settings
from focuscrawl.control import ControlFollower
from focuscrawl.fue import RANKING_METHODS, UserChooser, UserClassifier
from focuscrawl.fue.batch import model_store
from focuscrawl.fue.champion import ChampionFollower
from focuscrawl.fue.chooser import ChooserStage
from focuscrawl.fue.pipeline import POSTS_TOPIC, STATS_TOPIC, extract_topic, scores_topic
from focuscrawl.stream.process import StreamProcess, parser
from focuscrawl.topics.specs import TopicSpec

log = logging.getLogger("focuscrawl.fue.chooser")


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = parser("fue-chooser", __doc__, cfg)
    ap.add_argument("--method", required=True, help="ranking method (the project's loops.fue.method, resolved there)")
    ap.add_argument("--classifier", help="candidate classifier (joblib, UserClassifier.save) for HCP-like methods")
    ap.add_argument("--model", help="that classifier's name in the FUE model store (<project>/reference or "
                                    "<project>/candidate): follow its champion as the control topic names it")
    ap.add_argument("--lead", type=int, default=8, help="chosen users in flight (about one per extractor)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--group", help="consumer group, and so the changelog (default fue-chooser-<method>)")
    ap.add_argument("--instance", default="0", help="this instance's name within the group (transactional id, static group member id)")
    ap.add_argument("--posts-topic", default=POSTS_TOPIC)
    ap.add_argument("--stats-topic", default=STATS_TOPIC)
    ap.add_argument("--extract-topic", help=f"where chosen users go (default {extract_topic('<method>')})")
    ap.add_argument("--scores-topic", help=f"compacted pushed scores (default {scores_topic('<method>')})")
    ap.add_argument("--catch-up-wait", type=float, default=5.0,
                    help="seconds a chooser behind its input waits to catch up before it chooses anyway")
    ap.add_argument("--status-top", type=int, default=5, help="best candidates shown in the status file")
    args = ap.parse_args(argv)

    try:
        ranking = RANKING_METHODS.get(args.method)
    except KeyError as exc:
        ap.error(str(exc).strip('"'))
    classifier = UserClassifier.load(args.classifier) if args.classifier else None
    chooser = UserChooser(ranking(classifier=classifier, seed=args.seed))
    group = args.group or f"fue-chooser-{args.method}"
    champion = ChampionFollower(model_store(cfg), args.model, classifier) if args.model and classifier else None
    stage = ChooserStage(chooser, method=args.method, posts_topic=args.posts_topic, stats_topic=args.stats_topic,
                         scores_topic=args.scores_topic or scores_topic(args.method),
                         extract_topic=args.extract_topic or extract_topic(args.method),
                         lead=args.lead, catch_up_wait=args.catch_up_wait, champion=champion)
    with StreamProcess(f"fue-chooser-{args.method}", args, cfg) as proc:
        stage.on_score_applied = lambda record: proc.push_applied(record.topic, getattr(record, "timestamp", None))
        if champion is not None:
            proc.follow(args.control_topic, champion.apply, follower_cls=ControlFollower)
        proc.ensure_topics([TopicSpec(args.posts_topic, "author"), TopicSpec(args.stats_topic, "user"),
                            TopicSpec(stage.extract_topic, "user"),
                            TopicSpec(stage.scores_topic, "user", compacted=True)])
        runner = TransactionalStage(args.bootstrap, [args.posts_topic, args.stats_topic, stage.scores_topic], group,
                                    stage, transactional_id=f"{group}-{args.instance}",
                                    replication=cfg.kafka_replication)

        def status() -> dict:
            current = {**stage.status(top=args.status_top), "transactions": runner.transactions,
                       "skipped": runner.skipped, "restore_seconds": round(runner.restore_seconds, 1)}
            proc.metrics.candidates.set(current["candidates"])
            return current

        proc.status(status)
        log.info("choosing users by %s into %s (group %s, changelog %s); text scoring: %s", args.method,
                 stage.extract_topic, group, runner.changelog, chooser.text_scoring())
        try:
            runner.run(proc.stopping, on_batch=proc.tick)
        except Exception:  # noqa: BLE001 - state may be ahead of the changelog now: restart from the log
            log.exception("transaction failed; exiting so the supervisor restarts the chooser from its changelog")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
