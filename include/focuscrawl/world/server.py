"""The world's two HTTP servers: the crawl surface and, on another port, the evaluation interface.

The crawl server speaks only what a real site would (Reddit JSON listings, HTML, feeds,
sitemaps, robots.txt, the ``Date`` header, which carries the simulated now as a real site's carries
its UTC clock) and the click log a search engine keeps of its own result pages
(:mod:`focuscrawl.world.clicks`); it never reveals ground truth. The evaluation server
holds the clock, the ground truth, the click feedback and the fault switches (docs/world.md, "The
world"). Bodies are JSON with sorted keys and a pure function of (seed, simulated time), so
two worlds with the same seed paused at the same time answer byte for byte the same, but for the
absolute URLs that name the world's own address (a self post's ``url``).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from focuscrawl.world.accesslog import listed_things
from focuscrawl.world.oauth import PUBLIC_PATHS, TOKEN_PATH, OAuthEmulator
from focuscrawl.world.clicks import CLICKS_PATH
from focuscrawl.world.world import World

JSON = "application/json; charset=UTF-8"


def dumps(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: without it, 40 ms delayed ACKs
    server_version = "focuscrawl-world"
    sys_version = ""
    world: World

    def log_message(self, format, *args) -> None:  # noqa: A002 - the stdlib's name; stderr logging off (see world.access_log)
        pass

    def _send(self, status: int, ctype: str, body: bytes, headers: dict[str, str] | None = None,
              declared_length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if declared_length is None else declared_length))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if declared_length is not None:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _query(self) -> tuple[str, dict[str, str]]:
        parts = urlsplit(self.path)
        return parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()}


class CrawlHandler(_Handler):
    """Reddit-style JSON under /r and /user, the web under /site, the graph under /graph."""

    def do_HEAD(self) -> None:
        self.do_GET()

    def date_time_string(self, timestamp=None) -> str:
        """The ``Date`` header (RFC 9110 6.6.1): the world's simulated now, whole seconds."""
        return email.utils.formatdate(int(self.world.clock.now()) if timestamp is None else timestamp, usegmt=True)

    def do_GET(self) -> None:
        world = self.world
        arrived = time.time()
        path, q = self._query()
        client = self.headers.get("X-Client-Id") or f"{self.client_address[0]}|{self.headers.get('User-Agent', '')}"

        clock = world.clock.now()

        def log(status: int, fault: str | None, body: bytes = b"", **served) -> None:
            things = listed_things(body) if status == 200 and fault is None and path.startswith("/r/") else None
            world.access_log.record(arrived, client, self.path, status, fault, things, clock=clock, **served)

        if world.oauth is not None and path not in PUBLIC_PATHS:  # reddit's bearer token (world/oauth.py)
            if world.oauth.check(self.headers.get("Authorization")) is None:
                status, headers, body = OAuthEmulator.unauthorized_response()
                log(status, "unauthorized")
                return self._send(status, JSON, body, headers)
            client = f"oauth:{world.oauth.client_id}"  # rate limits count per OAuth client, as reddit's do
        allowed, rl_headers = world.limiter.hit(client)
        if not allowed:
            body = dumps({"error": 429, "message": "Too Many Requests"})
            log(429, "rate_limit")
            return self._send(429, JSON, body, rl_headers)
        faults = world.faults
        host = path.split("/")[2] if path.startswith("/site/") and path.count("/") >= 2 else None
        if host is not None and host in faults.dead_hosts:
            log(0, "dead_host")
            self.close_connection = True  # a host that went away: the socket closes without an answer
            return
        dice = world.dice.roll(faults)
        if dice["slow"]:
            time.sleep(faults.slow_seconds)
        if dice["error"]:
            log(503, "error")
            return self._send(503, "text/plain", b"503 Service Unavailable", rl_headers)
        if any(path.startswith(p) for p in faults.redirect_loop if p):
            hop = int(q.get("hop", "0")) + 1
            log(302, "redirect_loop")
            return self._send(302, "text/plain", b"", {**rl_headers, "Location": f"{path}?hop={hop % 2}"})
        if path in faults.missing_paths:  # a site without that endpoint (a real site has no click log)
            status, ctype, body = 404, JSON, dumps({"error": 404, "message": "Not Found"})
        elif path == CLICKS_PATH:
            status, ctype, body = world.click_log.answer(client, q, float(int(world.clock.now())), world.web)
        else:
            # the address the world advertises (not the client's Host header, which it could forge)
            origin = "http://%s:%d" % self.server.server_address[:2]
            status, ctype, body, *extra = world.crawl(path, q, urlsplit(self.path).query, origin)
            if extra:  # a redirect's Location (world/mess.py)
                rl_headers = {**rl_headers, **extra[0]}
        not_modified, validators = False, {}
        if status == 200 and not (dice["malformed"] or dice["truncate"]):  # validators of the whole body only
            not_modified, validators = world.conditional(path, self.headers, body)
            rl_headers = {**rl_headers, **validators}
        if dice["malformed"]:
            body = body[: len(body) // 3] + b'<<{"\x00'
        wire = b"" if not_modified else body
        if not not_modified and world.web is not None and path.startswith("/site/"):  # on the way out, faults and all
            wire, encoding = world.web.mess.compress(body, self.headers.get("Accept-Encoding"), ctype)
            rl_headers = {**rl_headers, **encoding}
        served = {"bytes": len(wire), "validator": bool(validators),
                  "conditional": bool(self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since")),
                  "digest": hashlib.sha1(body).hexdigest() if status == 200 and not not_modified else None}
        if not_modified:
            log(304, None, **served)
        elif dice["malformed"]:
            log(status, "malformed", **served)
        elif dice["truncate"]:
            log(status, "truncate", **served)
        else:
            # Logged before the bytes go out: a client killed mid-read was still served them, and
            # the suite expects it to fetch them again.
            log(status, "slow" if dice["slow"] else None, body, **served)
            if status == 200:
                world.click_log.crawled(client, path, float(int(world.clock.now())), world.web)
        if dice["truncate"]:
            return self._send(status, ctype, wire[: len(wire) // 2], rl_headers, declared_length=len(wire))
        if not_modified:  # RFC 9110 15.4.5: the validators again, no body
            self.send_response(304)
            for k, v in rl_headers.items():
                self.send_header(k, v)
            return self.end_headers()
        self._send(status, ctype, wire, rl_headers)

    def do_POST(self) -> None:
        """reddit's token endpoint when the world requires OAuth (world/oauth.py); no other POST on this port."""
        path, _ = self._query()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.world.oauth is None or path != TOKEN_PATH:
            return self._send(404, JSON, dumps({"error": 404, "message": "Not Found"}))
        status, headers, answer = self.world.oauth.token(self.headers.get("Authorization"), body)
        self.world.access_log.record(time.time(), f"{self.client_address[0]}|{self.headers.get('User-Agent', '')}",
                                     "POST " + path, status, None if status == 200 else "oauth_refused", None)
        self._send(status, JSON, answer, headers)


class EvalHandler(_Handler):
    """Clock, ground truth, click feedback and fault switches: never on the crawl path."""

    def do_GET(self) -> None:
        path, q = self._query()
        self.world.eval_access_log.record(time.time(), f"{self.client_address[0]}|{self.headers.get('User-Agent', '')}",
                                          self.path, 0, None)
        status, obj = self.world.evaluate(path, q)
        self._send(status, JSON, dumps(obj))

    def do_POST(self) -> None:
        path, _ = self._query()
        self.world.eval_access_log.record(time.time(), f"{self.client_address[0]}|{self.headers.get('User-Agent', '')}",
                                          "POST " + self.path, 0, None)
        length = int(self.headers.get("Content-Length") or 0)
        try:
            payload = json.loads(self.rfile.read(length) or b"{}")
            status, obj = self.world.control(path, payload)
        except (ValueError, TypeError) as exc:
            status, obj = 400, {"error": str(exc)}
        self._send(status, JSON, dumps(obj))


class WorldServer:
    """Both servers of one world, each in a daemon thread; ``with WorldServer(...)`` stops them on exit."""

    def __init__(self, world: World, host: str = "127.0.0.1", port: int = 0, eval_port: int = 0) -> None:
        self.world = world
        self.crawl = ThreadingHTTPServer((host, port), type("Crawl", (CrawlHandler,), {"world": world}))
        self.eval = ThreadingHTTPServer((host, eval_port), type("Eval", (EvalHandler,), {"world": world}))
        for srv in (self.crawl, self.eval):
            srv.daemon_threads = True
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    @property
    def url(self) -> str:
        return "http://%s:%d" % self.crawl.server_address[:2]

    @property
    def eval_url(self) -> str:
        return "http://%s:%d" % self.eval.server_address[:2]

    def start(self) -> "WorldServer":
        for srv in (self.crawl, self.eval):
            t = threading.Thread(target=srv.serve_forever, name=f"world-{srv.server_address[1]}", daemon=True)
            t.start()
            self._threads.append(t)
        ticker = threading.Thread(target=self._tick, name="world-clock", daemon=True)
        ticker.start()
        self._threads.append(ticker)
        return self

    def _tick(self) -> None:
        # Keep the live stream built as simulated time passes, so no request pays for a long backlog.
        while not self._stop.wait(0.5):
            self.world.now()

    def stop(self) -> None:
        self._stop.set()
        for srv in (self.crawl, self.eval):
            srv.shutdown()
            srv.server_close()

    def __enter__(self) -> "WorldServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

