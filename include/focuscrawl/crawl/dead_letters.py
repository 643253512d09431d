"""Crawler rejections on their way to the ``dead_letter`` table, through Kafka like every record.

A malformed listing body is never a crash and never a silent drop. The crawler
produces each :class:`~focuscrawl.parse.rejection.DeadLetter` to :data:`DEAD_LETTER_TOPIC`
(JSON, payload in base64 because it is raw bytes) and a stream consumer appends it to
:data:`~focuscrawl.lake.delta_sink.DEAD_LETTER_TABLE` exactly once per offset.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict

from focuscrawl.lake.delta_sink import RecordRejected, StreamRecord, json_row
from focuscrawl.parse.rejection import DeadLetter

DEAD_LETTER_TOPIC = "focuscrawl.dead_letter"


def encode(letter: DeadLetter) -> bytes:
    row = asdict(letter)
    row["payload"] = base64.b64encode(letter.payload).decode()
    return json.dumps(row).encode()


def decode_row(record: StreamRecord) -> dict:
    """A dead-letter topic record -> a ``dead_letter`` row (the sink's ``convert``)."""
    row = json_row(record)
    try:
        row["payload"] = base64.b64decode(row["payload"], validate=True)
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordRejected(f"dead letter without a base64 payload: {exc}") from None
    return row
