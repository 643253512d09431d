"""Community Explorer process (seed 000, section III): community listings -> the posts topic, keyed by author.

    python streaming/fue/explorer.py --community-chooser random --interval 2

Reads ``/r/{sub}/new.json`` and ``/r/{sub}/comments.json`` of communities picked by the chooser
(``focuscrawl.fue.pipeline.COMMUNITY_CHOOSERS``) through the project's Fetcher (robots.txt,
politeness, SSRF guard). Run several with different ``--seed`` to explore faster.
"""

from __future__ import annotations

import argparse
import logging
import sys

from focuscrawl.config import settings
from focuscrawl.fetch import Fetcher
from focuscrawl.fue.pipeline import COMMUNITY_CHOOSERS, POSTS_TOPIC, CommunityExplorer, RedditClient, post_to_json

from stage import producer, stop_on_signals

log = logging.getLogger("focuscrawl.fue.explorer")


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", default=cfg.world_url)
    ap.add_argument("--bootstrap", default=cfg.kafka_bootstrap)
    ap.add_argument("--topic", default=POSTS_TOPIC)
    ap.add_argument("--community-chooser", default="RANDOM", type=str.upper, choices=COMMUNITY_CHOOSERS.names())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between community visits")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    stopping = stop_on_signals()
    explorer = CommunityExplorer(RedditClient(Fetcher.from_settings(cfg), args.base_url),
                                 COMMUNITY_CHOOSERS.create(args.community_chooser, seed=args.seed))
    out = producer(args.bootstrap)
    log.info("exploring %s with the %s community chooser into %s", args.base_url, args.community_chooser, args.topic)
    try:
        while not stopping.is_set():
            try:
                posts = explorer.visit()
            except Exception:  # noqa: BLE001 - a failed visit is retried on the next tick
                log.exception("community visit failed")
                posts = []
            for post in posts:
                out.send(args.topic, key=post.author.encode(), value=post_to_json(post))
            out.flush()
            stopping.wait(args.interval)
    finally:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
