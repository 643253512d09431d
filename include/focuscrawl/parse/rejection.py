"""Rejections: what every parser returns instead of raising when its input is malformed.

Any malformed input becomes a counted, logged rejection carrying the reason
and the raw payload, never a crash and never a silent drop. A :class:`Rejection` is what a
parser hands back; :class:`DeadLetter` is the record on the dead-letter Kafka topic and the row it
becomes in the ``dead_letter`` Delta table (declared in ``focuscrawl.lake.delta_sink``, whose sinks also
dead-letter the Kafka records they cannot convert), so the input can be inspected and replayed.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass

log = logging.getLogger(__name__)

# How many bytes of a rejected payload go into a log line; the full payload goes to the dead letter.
_LOG_PREVIEW = 120

_counts: Counter[str] = Counter()
_counts_lock = threading.Lock()


def rejection_counts() -> dict[str, int]:
    """Rejections created in this process so far, per parser (for metrics and end-of-run summaries)."""
    with _counts_lock:
        return dict(_counts)


def decode_recovering(raw: bytes, codec: str = "utf-8") -> tuple[str, str | None]:
    """``raw`` decoded; undecodable bytes become U+FFFD, and then the second item says so, so the
    caller flags the recovered input in the dead letter instead of letting mojibake pass silently."""
    try:
        return raw.decode(codec), None
    except UnicodeDecodeError as exc:
        text = raw.decode(codec, errors="replace")
        bad = text.count("\ufffd") - raw.decode(codec, errors="ignore").count("\ufffd")
        return text, (f"not valid {codec.upper()} (first bad byte at offset {exc.start}); {bad} undecodable "
                      f"sequence(s) read as U+FFFD, the rest recovered")


def fingerprint(payload: bytes) -> tuple[str, int]:
    """SHA-256 (hex) and length of a refused payload: the dedup key of a replay."""
    return hashlib.sha256(payload).hexdigest(), len(payload)


@dataclass(frozen=True)
class Rejection:
    """One malformed input: why it was refused, the raw bytes or text as received, and where it came from.

    Creating one counts it (:func:`rejection_counts`) and logs it at WARNING, so no parser can
    drop input silently; the caller sends it on with :meth:`dead_letter`.
    """

    reason: str
    payload: bytes | str
    url: str
    parser: str = "unknown"

    def __post_init__(self) -> None:
        with _counts_lock:
            _counts[self.parser] += 1
        preview = self.payload[:_LOG_PREVIEW]
        log.warning("rejected %s input from %s: %s (payload %r)", self.parser, self.url, self.reason, preview)

    @property
    def payload_bytes(self) -> bytes:
        if isinstance(self.payload, bytes):
            return self.payload
        return self.payload.encode("utf-8", errors="surrogatepass")

    def dead_letter(self, source: str = "", at_ms: int | None = None) -> "DeadLetter":
        """The dead-letter record of this rejection (``source``: the crawler or consumer that hit it)."""
        raw = self.payload_bytes
        sha256, size = fingerprint(raw)
        return DeadLetter(
            parser=self.parser,
            url=self.url,
            reason=self.reason,
            payload=raw,
            payload_sha256=sha256,
            payload_size=size,
            source=source,
            rejected_at_ms=int(time.time() * 1000) if at_ms is None else at_ms,
        )


@dataclass(frozen=True)
class DeadLetter:
    """A parser's rejection as a ``dead_letter`` row: enough to see why input was refused and to replay it."""

    parser: str
    url: str
    reason: str
    payload: bytes
    payload_sha256: str
    payload_size: int
    source: str
    rejected_at_ms: int
