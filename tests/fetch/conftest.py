"""A tiny local site on a loopback port (allow-listed per test), with an access log."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness, RetryPolicy


class FakeClock:
    """Wall and monotonic time that only moves when someone sleeps: politeness without waiting."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.now += max(seconds, 0.0)


class Site:
    """Routes: path -> (status, headers, body) or a callable(handler) -> that tuple."""

    def __init__(self) -> None:
        self.routes: dict = {}
        self.clock = time.monotonic  # what arrival times are read from (a test's FakeClock: its time)
        self.log: list[tuple[float, str]] = []  # (time at arrival, path)
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                with site.lock:
                    site.log.append((site.clock(), self.path))
                    site.in_flight += 1
                    site.max_in_flight = max(site.max_in_flight, site.in_flight)
                try:
                    route = site.routes.get(self.path, (404, {}, b"not found"))
                    status, headers, body = route(self) if callable(route) else route
                finally:
                    # Counted as served once the response is ready: the client may read it and send
                    # its next request before this thread gets back from writing.
                    with site.lock:
                        site.in_flight -= 1
                self.send_response(status)
                headers = {"Content-Type": "text/plain", **headers}
                for k, v in headers.items():
                    self.send_header(k, v)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def paths(self) -> list[str]:
        return [p for _, p in self.log]

    def times(self, path: str) -> list[float]:
        return [t for t, p in self.log if p == path]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_clock():
    return FakeClock()


@pytest.fixture
def site():
    s = Site()
    s.routes["/robots.txt"] = (200, {}, b"User-agent: *\nDisallow: /private/\n")
    yield s
    s.stop()


@pytest.fixture
def make_fetcher(site):
    made = []

    def make(min_delay=0.0, clock=None, **kwargs):
        """A fetcher for ``site``; with ``clock`` (a FakeClock) its politeness waits on that clock, not for real."""
        kwargs.setdefault("guard", AddressGuard([f"127.0.0.1:{site.port}"]))
        kwargs.setdefault("retry", RetryPolicy(max_retries=2, base_delay=0.05, seed=1))
        timing = {"clock": clock, "sleep": clock.sleep} if clock is not None else {}
        f = Fetcher(user_agent="focuscrawl-test/1.0", politeness=HostPoliteness(min_delay=min_delay, **timing),
                    **kwargs)
        made.append(f)
        return f

    yield make
    for f in made:
        f.close()
