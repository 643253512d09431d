"""User Classifier process (seed 000, section III): extracted histories -> verdicts (stats events) topic.

    python streaming/fue/classifier.py --reference var/fue/reference.joblib --run-id live

The reference classifier (L1 logistic regression, threshold 0.9) judges each whole history. The
verdict is timed by the records (``focuscrawl.fue.pipeline.VerdictTimes``): the site time the
history was read at, which the extractor took from the ``Date`` of the site's last response (else
the newest item's ``created_utc``); ``--run-start`` is the site time the run's clock counts from
(default: the first history judged). Nothing here reads the world's evaluation interface.
``streaming/consumer.py --sink fue_extractions`` writes the events to Delta and counts them as they land
(``focuscrawl_extracted_users_total``, ``focuscrawl_harvest_ratio`` by method); status and metrics
as every stream process (``focuscrawl.stream.process``). Each verdict is published in one Kafka transaction
with its history's offset (``StreamProcess.run_stage``), so a restart never judges a history twice.
With ``--model <project>/reference`` (its name in the FUE model store) it follows the control topic and judges
with each new champion from the next batch on (`focuscrawl examples add`, a rollback: ``focuscrawl.fue.champion``);
the status file's ``classifier`` says which version is in use.
"""

from __future__ import annotations

import sys

from focuscrawl.config import settings
from focuscrawl.control import ControlFollower
from focuscrawl.fue import UserClassifier
from focuscrawl.fue.batch import model_store
from focuscrawl.fue.champion import ChampionFollower
from focuscrawl.fue.pipeline import HISTORIES_TOPIC, STATS_TOPIC, History, ReferenceJudge, VerdictTimes
from focuscrawl.stream.process import StreamProcess, parser
from focuscrawl.topics.specs import TopicSpec

NAME = "fue-classifier"


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = parser(NAME, __doc__, cfg)
    ap.add_argument("--reference", required=True, help="reference classifier (joblib, UserClassifier.save)")
    ap.add_argument("--run-id", default="live")
    ap.add_argument("--run-start", type=float, default=None,
                    help="site time (Unix seconds) the run's sim_time counts from (default: the first history judged)")
    ap.add_argument("--instance", default="0", help="this instance's name within the group (transactional id, static group member id)")
    ap.add_argument("--model", help="the reference's name in the FUE model store (<project>/reference): follow its "
                                    "champion as the control topic names it, without a restart")
    args = ap.parse_args(argv)

    judge = ReferenceJudge(UserClassifier.load(args.reference))
    times = VerdictTimes(args.run_start)
    champion = ChampionFollower(model_store(cfg), args.model, judge.classifier) if args.model else None

    with StreamProcess(NAME, args, cfg) as proc:
        proc.ensure_topics([TopicSpec(STATS_TOPIC, "user")])
        counts = {"judged": 0}
        proc.status(lambda: {"run_id": args.run_id, **counts})
        if champion is not None:
            proc.follow(args.control_topic, champion.apply, follower_cls=ControlFollower)
            proc.status(champion.status)

        def handle(record):
            history = History.from_json(record.value)
            sim_time, sim_epoch = times(history)
            event = judge.judge(history, run_id=args.run_id, method=history.method, sim_time=sim_time,
                                sim_epoch=sim_epoch)
            counts["judged"] += 1
            yield STATS_TOPIC, history.user, event.to_json()

        def idle():  # between two batches: a new champion judges from the next one on
            judge.classifier = (champion.take() if champion is not None else None) or judge.classifier
            return ()

        proc.run_stage([HISTORIES_TOPIC], "fue-classifier", handle, idle, instance=args.instance)
    return 0


if __name__ == "__main__":
    sys.exit(main())
