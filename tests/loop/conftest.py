"""A tiny local site serving Reddit-format listings (test-only; the real world server is another area's)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

# Two pages of /r/all/new.json: the first points to the second with `after`.
AUTHORS = [["alice", "bob", "carol"], ["dave", "bob"]]


def thing(n: int, author: str) -> dict:
    return {"kind": "t3", "data": {"name": f"t3_{n}", "id": str(n), "author": author, "subreddit": "all",
                                   "title": f"post {n}", "score": n, "num_comments": 1, "created_utc": 1.7e9 + n,
                                   "permalink": f"/r/all/comments/{n}/"}}


def listing(page: int) -> dict:
    start = sum(len(p) for p in AUTHORS[:page])
    children = [thing(start + i, a) for i, a in enumerate(AUTHORS[page])]
    after = children[-1]["data"]["name"] if page + 1 < len(AUTHORS) else None
    return {"kind": "Listing", "data": {"after": after, "children": children}}


class ListingSite:
    def __init__(self) -> None:
        self.requests: list[str] = []
        self.throttle = 0  # answer this many requests with 429 first
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                site.requests.append(self.path)
                if site.throttle > 0:
                    site.throttle -= 1
                    self.send_response(429)
                    self.send_header("Retry-After", "1")
                    self.end_headers()
                    return
                url = urlparse(self.path)
                if url.path != "/r/all/new.json":
                    self.send_error(404)
                    return
                after = parse_qs(url.query).get("after", [None])[0]
                page = 0 if after is None else 1 + next(
                    i for i in range(len(AUTHORS)) if listing(i)["data"]["after"] == after)
                body = json.dumps(listing(page)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listing_site():
    site = ListingSite()
    yield site
    site.close()
