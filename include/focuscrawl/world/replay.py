"""Replay: serve a recorded crawl back as a world, so policies can be compared offline on what was fetched.

Two kinds of recordings, told apart by their columns (a Delta table read with ``deltalake``, or
JSON lines):

* posts as the listing crawler stored them (the ``reddit_posts`` table: ``name``, ``author``,
  ``subreddit``, ``created_utc``, ``title``, ``selftext``, ``score``, ``num_comments``...):
  ``/r/all/new.json``, ``/r/{sub}/new.json`` and ``/user/{name}/submitted.json`` are rebuilt
  from them in Reddit's format, with ``after`` cursors, showing what was created by the
  simulated now (the last fetched version of each post);
* raw responses (``url``, ``fetched_at``, ``status``, ``body``): a URL at simulated time t gets
  its last recording fetched at or before t.
"""

from __future__ import annotations

import bisect
import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from focuscrawl.world import reddit

_SUB = re.compile(r"^/r/([A-Za-z0-9_]+)/new(?:\.json)?/?$")
_USER = re.compile(r"^/(?:user|u)/([A-Za-z0-9_-]+)/submitted(?:\.json)?/?$")
POST_FIELDS = ("name", "id", "author", "subreddit", "title", "selftext", "score", "num_comments",
               "created_utc", "permalink")


def _key(url: str) -> str:
    """Path and query, so recordings made against any host or port replay on this one."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


class Replay:
    def __init__(self, bodies: list[dict] = (), posts: list[dict] = ()) -> None:
        self._by_url: dict[str, tuple[list[float], list[tuple[int, bytes]]]] = {}
        for r in sorted(bodies, key=lambda r: (_key(r["url"]), float(r["fetched_at"]))):
            times, answers = self._by_url.setdefault(_key(r["url"]), ([], []))
            raw = r["body"]
            times.append(float(r["fetched_at"]))
            answers.append((int(r.get("status") or 200), raw.encode() if isinstance(raw, str) else bytes(raw)))
        latest: dict[str, dict] = {}
        for r in sorted(posts, key=lambda r: r.get("fetched_at_ms") or 0):
            latest[r["name"]] = {k: r.get(k) for k in POST_FIELDS}
        self._posts = sorted(latest.values(), key=lambda p: (float(p["created_utc"]), p["name"]))
        self._times = [float(p["created_utc"]) for p in self._posts]

    @classmethod
    def load(cls, source: Path) -> "Replay":
        source = Path(source)
        if (source / "_delta_log").is_dir():
            from deltalake import DeltaTable

            rows = DeltaTable(str(source)).to_pyarrow_table().to_pylist()
        else:
            with source.open(encoding="utf-8") as f:
                rows = [json.loads(line) for line in f if line.strip()]
        if rows and "body" in rows[0]:
            return cls(bodies=rows)
        if rows and "created_utc" in rows[0]:
            return cls(posts=rows)
        raise ValueError(f"{source}: neither raw responses (url, fetched_at, body) nor posts (name, created_utc, ...)")

    def answer(self, path: str, query: str, now: float) -> tuple[int, bytes] | None:
        if self._posts:
            return self._listing(path, {k: v[-1] for k, v in parse_qs(query).items()}, now)
        found = self._by_url.get(path + (f"?{query}" if query else "")) or self._by_url.get(path)
        if found is None:
            return None
        times, answers = found
        k = bisect.bisect_right(times, now)
        return answers[k - 1] if k else None

    def _listing(self, path: str, q: dict[str, str], now: float) -> tuple[int, bytes] | None:
        m_sub, m_user = _SUB.match(path), _USER.match(path)
        if not (m_sub or m_user):
            return None
        visible = self._posts[: bisect.bisect_right(self._times, now)]
        if m_sub and m_sub.group(1).lower() != "all":
            visible = [p for p in visible if (p["subreddit"] or "").lower() == m_sub.group(1).lower()]
        elif m_user:
            visible = [p for p in visible if p["author"] == m_user.group(1)]
        newest = visible[::-1][: reddit.MAX_DEPTH]
        start = 0
        if q.get("after"):
            start = next((k + 1 for k, p in enumerate(newest) if p["name"] == q["after"]), len(newest))
        chosen = newest[start:start + reddit.clamp_limit(q.get("limit"))]
        children = [{"kind": "t3", "data": {**p, "created": p["created_utc"]}} for p in chosen]
        more = chosen and start + len(chosen) < len(newest)
        body = reddit.listing(children, chosen[-1]["name"] if more else None)
        return 200, json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")

    def urls(self) -> int:
        return len(self._by_url) + len(self._posts)
