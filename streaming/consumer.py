"""Stream consumer: a Kafka topic -> a Delta table, exactly once, for every registered sink.

    python streaming/consumer.py --sink reddit_posts --group posts-to-delta
    python streaming/consumer.py --sink fue_extractions            # topic and group from the sink

The one entry point of every landing (``focuscrawl.stream.sinks.SINKS``: reddit_posts, fue_posts,
dead_letter, fue_extractions, source_recrawls, page_clicks, ...): offsets travel inside the Delta
commit (``focuscrawl.lake.delta_sink``), so a SIGKILL at any point neither loses nor duplicates a row.
SIGTERM/SIGINT land what reached the topic before the stop (up to ``--drain-seconds``), flush and exit
cleanly. Status and metrics as every stream process
(``focuscrawl.stream.process``).
"""

from __future__ import annotations

import sys

from focuscrawl.config import settings
from focuscrawl.stream.sinks import SINKS, StreamConsumer
from focuscrawl.stream.process import StreamProcess, parser


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = parser("consumer", __doc__, cfg)
    ap.add_argument("--sink", "--table", dest="sink", required=True, choices=sorted(SINKS),
                    help="registered sink (the table it lands in)")
    ap.add_argument("--topic", help="topic to read (default: the sink's)")
    ap.add_argument("--group", help="consumer group (default: <sink>-to-delta)")
    ap.add_argument("--table-uri", help="where the table lives (default: in the lake)")
    ap.add_argument("--batch-size", type=int, default=500)
    ap.add_argument("--batch-seconds", type=float, default=2.0)
    ap.add_argument("--session-timeout-ms", type=int, default=10000)
    ap.add_argument("--drain-seconds", type=float, default=15.0,
                    help="on SIGTERM, at most this long landing what reached the topic before it (below the "
                         "supervisor's stop grace, 20 s)")
    args = ap.parse_args(argv)

    with StreamProcess(f"consumer-{args.sink}", args, cfg) as proc:
        consumer = StreamConsumer.for_sink(proc, args.sink, cfg, topic=args.topic, group=args.group,
                                           table_uri=args.table_uri, batch_size=args.batch_size,
                                           batch_seconds=args.batch_seconds,
                                           session_timeout_ms=args.session_timeout_ms,
                                           drain_seconds=args.drain_seconds)
        proc.status(consumer.status)
        consumer.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
