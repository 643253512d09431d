"""User Extractor process (seed 000, section III): a chosen user -> the user's whole history -> histories topic.

    python streaming/fue/extractor.py --method HCP

A member of group ``fue-extractor-<method>`` on ``focuscrawl.fue.extract.<method>``: every
chosen user reaches exactly one extractor. Histories are read up to the site's cap through the
project's Fetcher, which obeys robots.txt, per-host politeness and 429 ``Retry-After``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys

from focuscrawl.config import settings
from focuscrawl.fetch import Fetcher
from focuscrawl.fue.pipeline import EXTRACT_TOPIC, HISTORIES_TOPIC, SITE_CAP, RedditClient, UserExtractor

from stage import run_stage, stop_on_signals


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", required=True)
    ap.add_argument("--base-url", default=cfg.world_url)
    ap.add_argument("--bootstrap", default=cfg.kafka_bootstrap)
    ap.add_argument("--cap", type=int, default=SITE_CAP)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    extractor = UserExtractor(RedditClient(Fetcher.from_settings(cfg), args.base_url), cap=args.cap)

    def handle(record):
        user = json.loads(record.value)["user"]
        history = extractor.extract(user)
        yield HISTORIES_TOPIC, user, dataclasses.replace(history, method=args.method).to_json()

    run_stage(args.bootstrap, [f"{EXTRACT_TOPIC}.{args.method}"], f"fue-extractor-{args.method}", handle,
              stop_on_signals(), max_records=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
