"""The crawl server's access log, read on the evaluation port (``GET /access_log?since=N``).

The fault suite checks from the site's side what crawlers did to it: the gap
between two requests of one client (politeness) and which things a client was served whole
(every post the world delivered must end in Delta exactly once). ``bench/hygiene_bench.py --live``
classifies every request the platform's crawlers made by what it was served: the simulated time it
arrived at (its revisit period), the bytes on the wire, whether the answer offered a validator and the
request sent one, and the digest of a full body (an unchanged page fetched in full). A bounded ring in memory: the
world is a test and benchmark site, not a production server.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Access:
    seq: int
    at: float               # wall clock (Unix epoch seconds) when the request arrived
    client: str             # X-Client-Id, else address|User-Agent (as the rate limiter counts)
    path: str               # path and query as requested
    status: int             # 0: the connection was dropped without an answer (dead host)
    fault: str | None       # the fault the request met: error, slow, truncate, malformed, redirect_loop, dead_host
    things: list[str] = field(default_factory=list)  # fullnames in a listing delivered whole
    clock: float | None = None  # the world's simulated time when it arrived (its Date header)
    bytes: int = 0              # body bytes on the wire (gzipped where the world gzips; a 304 has none)
    validator: bool = False     # the answer carried ETag/Last-Modified
    conditional: bool = False   # the request carried If-None-Match/If-Modified-Since
    digest: str | None = None   # SHA-1 of a full 200 body as served, before gzip


def listed_things(body: bytes) -> list[str]:
    """Fullnames of the children of a Reddit ``Listing`` body (empty for anything else)."""
    try:
        doc = json.loads(body)
    except ValueError:
        return []
    children = doc.get("data", {}).get("children", []) if isinstance(doc, dict) else []
    return [c["data"]["name"] for c in children if isinstance(c, dict) and "name" in c.get("data", {})]


class AccessLog:
    def __init__(self, capacity: int = 100_000) -> None:
        self._entries: deque[Access] = deque(maxlen=capacity)
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def record(self, at: float, client: str, path: str, status: int, fault: str | None,
               things: list[str] | None = None, **served) -> None:
        """``served``: what :class:`Access` says of the answer (``clock``, ``bytes``, ``validator``, ...)."""
        with self._lock:
            self._entries.append(Access(next(self._seq), at, client, path, status, fault, things or [], **served))

    def since(self, seq: int, limit: int = 10_000) -> dict:
        """Entries with ``seq >= since`` (oldest first, at most ``limit``) and the ``next`` seq to ask for."""
        with self._lock:
            rows = [asdict(a) for a in self._entries if a.seq >= seq][:limit]
        return {"entries": rows, "next": rows[-1]["seq"] + 1 if rows else seq}
