"""A service's health as its own protocol answers it, within a short timeout.

Each service of :mod:`focuscrawl.services` has ``probe(timeout)``: Kafka a metadata request to the broker,
Airflow its API server's ``/api/v2/monitor/health`` (the metadata database and the scheduler's, DAG
processor's and triggerer's heartbeats), the warm Spark an RPC of the Spark Connect protocol with its
token, the world an HTTP request. A probe never raises: what failed is its ``detail``. ``focuscrawl
status`` shows these, not pid files (a pid says a process exists, not that it serves).
"""

from __future__ import annotations

from dataclasses import dataclass, field

PROBE_TIMEOUT = 2.0  # seconds per probe: status stays fast on a busy machine, and a hung service is "down"


@dataclass(frozen=True)
class Probe:
    """``up``: the service answered as it should. ``detail``: what it answered, or why it is down.
    ``parts``: its components' own probes (Airflow's scheduler, DAG processor, ...)."""

    up: bool
    detail: str = ""
    parts: dict[str, "Probe"] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"up": self.up, "detail": self.detail,
                **({"parts": {k: p.to_dict() for k, p in self.parts.items()}} if self.parts else {})}


def failed(exc: BaseException) -> Probe:
    """A probe that raised, as a down probe naming what went wrong (first line, bounded)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return Probe(False, f"{type(exc).__name__}: {text}"[:200].rstrip(": "))
