"""A tiny local site serving Reddit-format listings (``helpers.HttpSite``; the real world server is another area's)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import pytest

from helpers import HttpSite

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


class ListingSite(HttpSite):
    """``/r/all/new.json`` in two pages (``?after=`` the first page's last name); every other path 404.
    ``throttle``: answer this many requests (any path) with 429 and ``Retry-After: 1`` first; ``robots``: the
    robots.txt served (none, a 404, when empty)."""

    def __init__(self) -> None:
        super().__init__(default=self._answer)
        self.throttle = 0
        self.robots = ""

    @property
    def requests(self) -> list[str]:
        return self.paths()

    def _answer(self, handler) -> tuple[int, dict, bytes]:
        if self.throttle > 0:
            self.throttle -= 1
            return 429, {"Retry-After": "1"}, b""
        url = urlparse(handler.path)
        if url.path == "/robots.txt" and self.robots:
            return 200, {"Content-Type": "text/plain"}, self.robots.encode()
        if url.path != "/r/all/new.json":
            return 404, {}, b"not found"
        after = parse_qs(url.query).get("after", [None])[0]
        page = 0 if after is None else 1 + next(i for i in range(len(AUTHORS)) if listing(i)["data"]["after"] == after)
        return 200, {"Content-Type": "application/json"}, json.dumps(listing(page)).encode()


@pytest.fixture
def listing_site():
    with ListingSite() as site:
        yield site
