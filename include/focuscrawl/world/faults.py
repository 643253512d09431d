"""Fault switches for reliability tests: what a real crawl meets on a bad day.

Set at start (CLI flags) or at run time (``POST /faults`` on the evaluation server). Each
request draws its fault from one seeded generator, so a run with the same request order
meets the same faults.
"""

from __future__ import annotations

import random
import threading
from dataclasses import asdict, dataclass, field, fields


@dataclass
class Faults:
    error_rate: float = 0.0          # share of requests answered 503
    slow_rate: float = 0.0           # share of requests delayed by slow_seconds
    slow_seconds: float = 2.0
    truncate_rate: float = 0.0       # share of bodies cut in half (Content-Length still the full size)
    malformed_rate: float = 0.0      # share of bodies replaced by invalid JSON/HTML
    redirect_loop: list[str] = field(default_factory=list)    # path prefixes that redirect in a loop
    robots_disallow: list[str] = field(default_factory=list)  # extra Disallow lines in robots.txt
    dead_hosts: list[str] = field(default_factory=list)       # web hosts whose connections are dropped
    missing_paths: list[str] = field(default_factory=list)    # paths answered 404, e.g. the click log switched off

    def update(self, changes: dict) -> None:
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown fault switch(es) {sorted(unknown)}; known: {sorted(known)}")
        for k, v in changes.items():
            setattr(self, k, list(v) if isinstance(getattr(self, k), list) else float(v))

    def as_dict(self) -> dict:
        return asdict(self)


class FaultDice:
    """The seeded draws deciding which request meets which fault."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed ^ 0x5EED)
        self._lock = threading.Lock()

    def roll(self, faults: Faults) -> dict[str, bool]:
        with self._lock:
            draws = [self._rng.random() for _ in range(4)]
        return {
            "error": draws[0] < faults.error_rate,
            "slow": draws[1] < faults.slow_rate,
            "truncate": draws[2] < faults.truncate_rate,
            "malformed": draws[3] < faults.malformed_rate,
        }
