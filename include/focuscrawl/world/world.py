"""One world: the simulated clock, the social population, the web, faults and rate limits, wired by URL.

:meth:`World.crawl` answers the crawl surface, :meth:`World.evaluate` and :meth:`World.control`
the evaluation interface; the HTTP servers in :mod:`focuscrawl.world.server` only carry bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict

from focuscrawl.world import reddit
from focuscrawl.world.accesslog import AccessLog
from focuscrawl.world.clicks import CrawlClickLog
from focuscrawl.world.clock import SimClock
from focuscrawl.world.faults import FaultDice, Faults
from focuscrawl.world.population import TARGET_RICH, Population
from focuscrawl.world.ratelimit import RateLimiter
from focuscrawl.project.world import ValidatorKnobs
from focuscrawl.world.validators import conditional_answer

JSON = "application/json; charset=UTF-8"
_SUB = re.compile(r"^/r/([A-Za-z0-9_]+)/(new|comments)(\.json)?/?$")
_USER = re.compile(r"^/(?:user|u)/([A-Za-z0-9_-]+)/(submitted|comments)(?:\.json)?/?$")
# /comments/{id}, also under its permalink: /r/{sub}/comments/{id}/{slug}/[{comment id}/]
_THREAD = re.compile(r"^(?:/r/[A-Za-z0-9_]+)?/comments/([a-z0-9]+)(?:/[^/]*(?:/([a-z0-9]+))?)?/?(?:\.json)?$")
_INFO = re.compile(r"^/api/info(?:\.json)?/?$")
_SEARCH = re.compile(r"^/subreddits/search(?:\.json)?/?$")
_VALID_SUB = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{2,20}$")  # reddit's Subreddit.is_valid_name
ROBOTS = "User-agent: *\nDisallow: /login\nDisallow: /api/v1/me\nAllow: /\n"


def _json(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")


def _not_found(what: str) -> tuple[int, str, bytes]:
    return 404, JSON, _json({"error": 404, "message": "Not Found", "reason": what})


class World:
    """The state behind both servers; ``web`` (sites, sources, graph) is optional."""

    def __init__(self, population: Population, clock: SimClock, limiter: RateLimiter,
                 faults: Faults | None = None, web=None, replay=None) -> None:
        self.population = population
        self.clock = clock
        self.limiter = limiter
        self.faults = faults or Faults()
        self.dice = FaultDice(population.config.seed)
        self.web = web
        self.replay = replay  # a recorded crawl answers first when given (replay.py)
        self.access_log = AccessLog()
        self.oauth = None  # an OAuthEmulator (world/oauth.py) when the world requires reddit's OAuth
        self.eval_access_log = AccessLog()  # every request to the evaluation port (the live path must make none)
        self.click_log = CrawlClickLog()    # the crawl-side click log (world/clicks.py)
        self.validators = ValidatorKnobs()  # ETag/Last-Modified and 304 on web pages (world/validators.py): off

    def conditional(self, path: str, request_headers, body: bytes) -> tuple[bool, dict[str, str]]:
        """``(not_modified, validator headers)`` of a web page served with ``body`` (none when the knob is off
        or ``path`` is not a web page): :func:`focuscrawl.world.validators.conditional_answer`."""
        knobs = self.validators
        if not knobs.enabled or self.web is None or self.replay is not None or not path.startswith("/site/"):
            return False, {}
        modified = self.web.modified_at(path, float(int(self.clock.now())))
        if modified is None:
            return False, {}
        host = path.split("/")[2]
        return conditional_answer(request_headers, body, modified, ignore=host in knobs.ignoring(self.web.hosts))

    def now(self) -> float:
        """Simulated now, whole seconds (what a page served now can show), the stream built up to it."""
        now = float(int(self.clock.now()))
        self.population.advance(now)
        return now

    # crawl surface ------------------------------------------------------------------------------
    def crawl(self, path: str, q: dict[str, str], query: str = "", origin: str = "") -> tuple:
        """``(status, content type, body)``, and a fourth element, the headers to add, when there are some (a redirect's
        ``Location``)."""
        if self.replay is not None and path != "/robots.txt":
            found = self.replay.answer(path, query, self.clock.now())
            if found is None:
                return _not_found("not in the recorded crawl at this time")
            status, body = found
            return status, JSON if path.endswith(".json") or path.startswith("/r/") else "text/html; charset=UTF-8", body
        if path == "/robots.txt":
            extra = "".join(f"Disallow: {p}\n" for p in self.faults.robots_disallow)
            return 200, "text/plain; charset=UTF-8", (ROBOTS + extra).encode()
        if path.startswith(("/site/", "/graph/")):
            if self.web is None:
                return _not_found("this world has no web part")
            return self.web.crawl(path, q, float(int(self.clock.now())), origin)
        return self._reddit(path, q, origin)

    def _reddit(self, path: str, q: dict[str, str], origin: str) -> tuple:
        """reddit's API (``focuscrawl.world.reddit``): listings, comment threads, ``/api/info``, community search."""
        pop = self.population
        page = reddit.Page.of(q)
        m = _SUB.match(path)
        if m:
            sub, what, ext = m.groups()
            now = self.now()
            if sub.lower() == "all":
                nums, kind = (pop.posts_all, "t3") if what == "new" else (pop.comments_all, "t1")
                return 200, JSON, _json(reddit.stream_listing(pop, nums, kind, now, page, origin))
            k = pop.community_index(sub)
            if k is None:
                if not _VALID_SUB.match(sub):
                    return _not_found(f"{sub!r} is not a community name")
                # reddit sends a valid name it does not know to its community search, keeping the extension
                # (r2/controllers/reddit_base.py, set_subreddit: abort(302, "/subreddits/search?q=..."))
                location = f"/subreddits/search{ext or ''}?q={sub}"
                return 302, "text/html; charset=UTF-8", b"", {"Location": location}
            nums, kind = (pop.posts_by_community, "t3") if what == "new" else (pop.comments_by_community, "t1")
            return 200, JSON, _json(reddit.stream_listing(pop, nums.get(k, []), kind, now, page, origin))
        m = _THREAD.match(path)
        if m:
            now = self.now()
            post = pop.item(int(m.group(1), 36))
            if post is None or post.kind != "t3" or post.created > now:
                return _not_found(f"no post {m.group(1)}")
            focus = pop.item(int(m.group(2), 36)) if m.group(2) else None
            if m.group(2) and (focus is None or focus.kind != "t1" or focus.link_num != post.num or focus.created > now):
                return _not_found(f"no comment {m.group(2)} under post {m.group(1)}")
            return 200, JSON, _json(reddit.thread(pop, post, now, origin, focus))
        if _INFO.match(path):
            fullnames = [f for f in q.get("id", "").split(",") if f]
            if len(fullnames) > reddit.MAX_INFO_IDS:
                return 400, JSON, _json({"error": 400, "message": "Bad Request",
                                         "reason": f"at most {reddit.MAX_INFO_IDS} fullnames in id"})
            return 200, JSON, _json(reddit.info(pop, fullnames, self.now(), origin))
        if _SEARCH.match(path):
            return 200, JSON, _json(reddit.search_communities(pop, q.get("q", "")))
        m = _USER.match(path)
        if m:
            name, what = m.groups()
            i = pop.user_index(name)
            if i is None:
                return _not_found(f"no user {name}")
            kind = "t3" if what == "submitted" else "t1"
            return 200, JSON, _json(reddit.user_listing(pop, i, kind, self.now(), page, origin))
        return _not_found(path)

    # evaluation interface -----------------------------------------------------------------------
    def evaluate(self, path: str, q: dict[str, str]) -> tuple[int, dict]:
        pop = self.population
        if path == "/time":
            return 200, self.clock.state()
        if path == "/faults":
            return 200, self.faults.as_dict()
        if path == "/oauth" and self.oauth is not None:
            return 200, self.oauth.state()
        if path == "/access_log":
            return 200, self.access_log.since(int(q.get("since", "0")), int(q.get("limit", "10000")))
        if path == "/eval_access_log":  # requests to this port, this one included (the live path must make none)
            return 200, self.eval_access_log.since(int(q.get("since", "0")), int(q.get("limit", "10000")))
        if path == "/truth/population":
            return 200, {"users": pop.config.users, "positives": int(pop.labels.sum()),
                         "base_rate": pop.config.base_rate, "target_rich": list(TARGET_RICH),
                         "communities": pop.communities, "config": asdict(pop.config),
                         "stream_items": pop.stream_size()}
        if path == "/truth/users":
            names = [n for n in q.get("names", "").split(",") if n]
            labels = {}
            for n in names:
                i = pop.user_index(n)
                labels[n] = None if i is None else int(pop.labels[i])
            return 200, {"labels": labels}
        if path == "/truth/labels":
            offset = int(q.get("offset", "0"))
            limit = min(10_000, int(q.get("limit", "1000")))
            rows = [[pop.name(i), int(pop.labels[i])] for i in range(offset, min(pop.config.users, offset + limit))]
            return 200, {"offset": offset, "rows": rows, "total": pop.config.users}
        if self.web is not None:
            found = self.web.evaluate(path, q, self.clock.now())
            if found is not None:
                return 200, found
        return 404, {"error": 404, "path": path}

    def control(self, path: str, payload: dict) -> tuple[int, dict]:
        if path == "/clock":
            clock = self.clock
            if payload.get("pause"):
                clock.pause()
            if "set" in payload:
                clock.set(float(payload["set"]))
            if "advance" in payload:
                clock.advance(float(payload["advance"]))
            if "speedup" in payload:
                clock.set_speedup(float(payload["speedup"]))
            if payload.get("resume"):
                clock.resume()
            return 200, clock.state()
        if path == "/oauth" and self.oauth is not None:
            revoked = self.oauth.revoke_all() if payload.get("revoke") else 0
            return 200, {**self.oauth.state(), "revoked": revoked}
        if path == "/faults":
            self.faults.update(payload)
            return 200, self.faults.as_dict()
        return 404, {"error": 404, "path": path}
