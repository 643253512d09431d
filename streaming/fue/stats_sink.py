"""Stats sink process: the verdicts topic -> the ``fue_extractions`` Delta table, exactly once.

    python streaming/fue/stats_sink.py

The project's stream consumer (``streaming/consumer.py``: offsets inside the Delta commit) with
the focused-user-extraction stats table; run several in the same group to scale out.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # streaming/: the shared consumer

from consumer import StreamConsumer  # noqa: E402

from focuscrawl.config import settings  # noqa: E402
from focuscrawl.delta_sink import STREAM_DEAD_LETTER_TABLE, DeltaSink  # noqa: E402
from focuscrawl.fue.pipeline import STATS_TABLE, STATS_TOPIC  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default=cfg.kafka_bootstrap)
    ap.add_argument("--group", default="fue-stats-to-delta")
    ap.add_argument("--table", default=STATS_TABLE.path(cfg))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    sink = DeltaSink(args.table, STATS_TABLE, args.group, dead_letter_uri=STREAM_DEAD_LETTER_TABLE.path(cfg))
    consumer = StreamConsumer(args.bootstrap, STATS_TOPIC, args.group, sink)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: consumer.stopping.set())
    consumer.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
