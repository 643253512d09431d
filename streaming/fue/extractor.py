"""User Extractor process (seed 000, section III): a chosen user -> the user's whole history -> histories topic.

    python streaming/fue/extractor.py --method HCP

A member of group ``fue-extractor-<method>`` on ``focuscrawl.fue.extract.<method>``: every
chosen user reaches exactly one extractor. Histories are read up to the site's cap through the
project's Fetcher (``--fetch-spec FILE``), which obeys robots.txt, per-host politeness and
429 ``Retry-After``, at most ``--users-per-hour`` users an hour. Each history is published in one
Kafka transaction with its request's offset (``focuscrawl.stream.process.StreamProcess.run_stage``): a
SIGKILL between the two leaves an aborted history, unseen by ``read_committed`` readers, and the
restarted extractor extracts that user again, so each (method, user) is published once.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time

from focuscrawl.config import settings
from focuscrawl.core.params import add_arguments
from focuscrawl.fue.params import DEFAULT as FUE, EXTRACT_KNOBS
from focuscrawl.fue.pipeline import (HISTORIES_TOPIC, SITE_CAP, ExtractRequest, RedditClient, UserExtractor,
                                     extract_topic)
from focuscrawl.stream.process import StreamProcess, Stopped, parser
from focuscrawl.topics.specs import TopicSpec

log = logging.getLogger("focuscrawl.fue-extractor")


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = parser("fue-extractor", __doc__, cfg)
    ap.add_argument("--method", required=True)
    ap.add_argument("--base-url", default=cfg.world_url)
    ap.add_argument("--cap", type=int, default=SITE_CAP)
    ap.add_argument("--instance", default="0", help="this instance's name within the group (transactional id, static group member id)")
    add_arguments(ap, FUE, EXTRACT_KNOBS)  # the project's [loops.fue] users_per_hour, through the plan
    args = ap.parse_args(argv)

    with StreamProcess(f"fue-extractor-{args.method}", args, cfg) as proc:
        proc.ensure_topics([TopicSpec(HISTORIES_TOPIC, "user")])
        extractor = UserExtractor(RedditClient(proc.fetcher(), args.base_url), cap=args.cap)
        counts = {"extracted": 0}
        # `focuscrawl pause/resume fue` pauses its partitions; `focuscrawl budget fue users_per_hour N` sets the pace
        control = proc.control("fue", users_per_hour=args.users_per_hour)
        proc.status(lambda: {"method": args.method, "users_per_hour": control.budget("users_per_hour"), **counts})
        max_poll_s = max(300.0, 3 * 3600.0 / args.users_per_hour)
        next_slot = [time.monotonic()]
        too_slow = set()

        def gap() -> float:
            # A wait longer than the group's poll interval would drop the member: a budget that slow is
            # paced at the slowest the interval allows until the next start, which sizes it anew.
            budget = control.budget("users_per_hour")
            if 3600.0 / budget > max_poll_s / 3 and budget not in too_slow:
                too_slow.add(budget)
                log.warning("users_per_hour %g is slower than this run can pace (%.3g at least); run `focuscrawl up` "
                            "again to size the consumer for it", budget, 3 * 3600 / max_poll_s)
            return min(3600.0 / budget, max_poll_s / 3)

        def handle(record):
            request = ExtractRequest.from_json(record.value)
            user = request.user
            # The budget is a rate: one user per slot; a slot missed while a history was slow is not banked.
            if proc.wait(next_slot[0] - time.monotonic()):
                raise Stopped()
            next_slot[0] = max(next_slot[0] + gap(), time.monotonic())
            history = extractor.extract(user)
            counts["extracted"] += 1
            yield HISTORIES_TOPIC, user, dataclasses.replace(history, method=args.method, chosen=request.chosen).to_json()

        # A paced wait sits inside the poll loop: the group must not think the member died meanwhile.
        proc.run_stage([extract_topic(args.method)], f"fue-extractor-{args.method}", handle, max_records=1,
                       instance=args.instance, max_poll_interval_ms=int(max_poll_s * 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
