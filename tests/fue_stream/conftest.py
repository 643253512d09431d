"""Fakes of the focused-user-extraction stream tests: a Reddit-format site as in-memory listings."""

from __future__ import annotations

import pytest

from focuscrawl import testing
from focuscrawl.fue import UserClassifier
from focuscrawl.testing import OTHER_WORDS as OTHER, TARGET_WORDS as TARGET  # noqa: F401 (the tests import them)


def thing(kind: str, n: int, author: str, sub: str = "news", text: str = "", **extra) -> dict:
    data = {"name": f"{kind}_{n:x}", "id": f"{n:x}", "author": author, "created_utc": 1_700_000_000.0 + n,
            "subreddit": sub, "score": 1, "num_comments": 0, **extra}
    data["title" if kind == "t3" else "body"] = text or f"text {n}"
    return {"kind": kind, "data": data}


class FakeClient:
    """``RedditClient.listing`` over a dict of path -> records, honouring ``limit`` and ``after``."""

    def __init__(self, listings: dict[str, list[dict]]) -> None:
        self.listings = listings
        self.calls: list[tuple[str, int, str | None]] = []

    @property
    def requests(self) -> int:
        return len(self.calls)

    def listing(self, path: str, limit: int = 25, after: str | None = None, **_):
        self.calls.append((path, limit, after))
        items = [t["data"] | {"kind": t["kind"]} for t in self.listings.get(path, [])]
        start = 0 if after is None else next(i for i, r in enumerate(items) if r["name"] == after) + 1
        page = items[start:start + limit]
        more = start + limit < len(items)
        return page, (page[-1]["name"] if page and more else None)


@pytest.fixture(scope="session")
def toy_classifier() -> UserClassifier:
    return testing.toy_classifier()
