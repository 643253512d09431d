"""Community Explorer process (seed 000, section III): community listings -> the posts topic, keyed by author.

    python streaming/fue/explorer.py --community-chooser random --interval 2 --front-page-interval 5

Reads the front page (``--listing-path``, reddit's ``/r/all/new.json``, paged back to the posts its previous read
showed) every ``--front-page-interval`` seconds,
and ``/r/{sub}/new.json`` and ``/r/{sub}/comments.json`` of a community picked by the chooser
(``focuscrawl.fue.pipeline.COMMUNITY_CHOOSERS``) ``--interval`` seconds after the previous visit, through the
project's Fetcher (robots.txt, politeness, SSRF guard; with ``--fetch-spec FILE`` the site's), and
sends each post it has not sent before (``focuscrawl.fue.pipeline.CommunityExplorer``). Run several with
different ``--seed`` to explore faster. Status and metrics as every stream process (``focuscrawl.stream.process``).
"""

from __future__ import annotations

import logging
import sys

from focuscrawl.config import settings
from focuscrawl.fue.params import DEFAULT as FUE
from focuscrawl.fue.pipeline import COMMUNITY_CHOOSERS, POSTS_TOPIC, CommunityExplorer, RedditClient, post_to_json
from focuscrawl.core.params import add_arguments
from focuscrawl.stream.process import StreamProcess, parser
from focuscrawl.topics.specs import TopicSpec

log = logging.getLogger("focuscrawl.fue.explorer")

NAME = "fue-explorer"


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = parser(NAME, __doc__, cfg)
    ap.add_argument("--base-url", default=cfg.world_url)
    ap.add_argument("--topic", default=POSTS_TOPIC)
    ap.add_argument("--community-chooser", default=FUE.community_chooser, type=str.upper, choices=COMMUNITY_CHOOSERS.names())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--interval", type=float, default=FUE.visit_interval,
                    help="seconds between community visits (the project's loops.fue.visit_interval)")
    add_arguments(ap, FUE, ["listing_path"])  # --listing-path: the project's loops.fue.listing_path
    ap.add_argument("--front-page-interval", type=float, default=FUE.front_page_interval,
                    help="seconds between two reads of the front page, start to start (loops.fue.front_page_interval)")
    args = ap.parse_args(argv)

    with StreamProcess(NAME, args, cfg) as proc:
        proc.ensure_topics([TopicSpec(args.topic, "author")])
        explorer = CommunityExplorer(RedditClient(proc.fetcher(), args.base_url),
                                     COMMUNITY_CHOOSERS.create(args.community_chooser, seed=args.seed),
                                     listing_path=args.listing_path, front_page_interval=args.front_page_interval,
                                     visit_interval=args.interval)
        counts = {"posts": 0, "failed_reads": 0}

        def status() -> dict:
            proc.metrics.frontier.set(len(explorer.communities))
            return {"communities": len(explorer.communities), **explorer.reads,
                    "front_page_pages": explorer.front_page_pages, **counts}

        proc.status(status)
        log.info("exploring %s with the %s community chooser into %s: the front page (%s) every %.2f s, a "
                 "community every %.2f s", args.base_url, args.community_chooser, args.topic, args.listing_path,
                 args.front_page_interval, args.interval)
        proc.control("fue")  # `focuscrawl pause/resume fue`
        while proc.running():
            if proc.paused():
                continue
            try:
                # Each listing's posts are published (and flushed) as soon as it is parsed: a post's evidence
                # reaches the chooser without waiting for the other listings due.
                for posts in explorer.due():
                    for post in posts:
                        proc.send(args.topic, post.author, post_to_json(post))
                    counts["posts"] += len(posts)
                    proc.flush()
            except Exception:  # noqa: BLE001 - a failed read is retried on its next turn
                log.exception("listing read failed")
                counts["failed_reads"] += 1
            proc.wait(min(explorer.until_due(), proc.status_due_in()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
