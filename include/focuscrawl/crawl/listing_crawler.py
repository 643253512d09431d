"""The thin loop's crawler: read the newest-posts listing, emit every post, rank the authors seen.

Seed 000 (*Real-time focused extraction of social media users*) section II-B (focused user extraction on Reddit): a listing
crawler pages through ``/r/all/new.json`` and every post's author becomes a candidate user; the
candidates wait in a priority frontier whose order the batch side rewrites by pushing user
priorities (section III, the ranking is refreshed without stopping the crawl).

The crawler does no Kafka and no threading of its own: it gets a ``source`` (HTTP GET -> body)
and an ``emit(key, value)`` callable; ``streaming/crawler.py`` wires Kafka in.

Decision lineage (:mod:`focuscrawl.lake.decision`): no pushed priority chooses what this crawler fetches,
the listing's own order does (the newest posts, paged back), so every post it lands says so
(:data:`LISTING_ORDER`: ``chosen_by_method`` ``listing_order``, no model). The pushed priorities order the
candidate authors: the crawler keeps each author's latest pushed row (:meth:`ListingCrawler.apply_pushed`)
and its status names the push (model, version, score, rank) behind the author it would pick next.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Callable, Protocol
from urllib.parse import urlencode, urljoin

import pyarrow as pa

from focuscrawl.lake.decision import DECISION_COLUMNS, Decision
from focuscrawl.lake.delta_sink import LINEAGE_COLUMNS
from focuscrawl.fetch.errors import FetchError, refusal_of
from focuscrawl.fetch.warc import WARC_COLUMNS, fetch_archived, warc_columns
from focuscrawl.core.frontier import PriorityFrontier
from focuscrawl.parse.listing import FRONT_PAGE, parse_listing
from focuscrawl.parse.rejection import Rejection
from focuscrawl.lake.tables import Column, table

POSTS_TOPIC = "focuscrawl.posts"
# A post's identity: the sink stores each name once, however often the crawler re-reads it (a
# restart, or a new pass from the newest posts); the topic's key (author) is a function of it.
POSTS_UNIQUE_KEY = "name"
# What chose every listing fetch: the listing's order (newest posts first, paged back), not a push.
LISTING_ORDER = Decision("fue", "listing_order")

POSTS_TABLE = table(
    "reddit_posts",
    "Posts (t3 things) as seen in Reddit-format /new listings by the listing crawler, one row per Kafka "
    "record, appended exactly once by the stream consumer (seed 000, section II-B). The listing crawler's rows "
    "say what chose the listing fetch (chosen_*: listing_order, no model); the FUE explorer's too (listing_order "
    "for a front-page read, the community chooser's name, such as RANDOM, for a community visit).",
    [
        Column("name", pa.string(), "Reddit fullname, e.g. t3_abc123", nullable=False),
        Column("id", pa.string(), "post id without the kind prefix", nullable=False),
        Column("kind", pa.string(), "thing kind (t3 = post)", nullable=False),
        Column("author", pa.string(), "author's user name: the candidate user", nullable=False),
        Column("subreddit", pa.string(), "community the post was made in"),
        Column("title", pa.string(), "post title"),
        Column("selftext", pa.string(), "post body text (empty for link posts)"),
        Column("score", pa.int64(), "upvotes minus downvotes when the listing was fetched"),
        Column("num_comments", pa.int64(), "number of comments when the listing was fetched"),
        Column("created_utc", pa.float64(), "post creation time, Unix epoch seconds", nullable=False),
        Column("permalink", pa.string(), "path of the post's comment page"),
        Column("listing_url", pa.string(), "listing page the post was read from"),
        Column("fetched_at_ms", pa.int64(), "when the crawler fetched the listing, Unix epoch milliseconds"),
        *WARC_COLUMNS,
        *DECISION_COLUMNS,
        *LINEAGE_COLUMNS,
    ],
)


class ListingSource(Protocol):
    """HTTP GET -> body; :class:`focuscrawl.fetch.Fetcher` is the one every crawler uses."""

    def get(self, url: str) -> bytes: ...


class ListingCrawler:
    """Page through a listing, emit each post keyed by author, keep authors in a priority frontier.

    Authors enter the frontier with ``new_candidate_score`` (below any pushed priority, which is
    normalised to 0-1) and keep a pushed score once they have one (:meth:`apply_pushed` keeps the push's
    model, version and rank beside it, for :meth:`status`). Thread-safe between the crawl
    loop and the thread applying pushed priorities. ``on_rejection`` receives what the listing
    parser refused (a malformed body, a bad child) so it can go to the dead letters.
    """

    def __init__(self, source: ListingSource, emit: Callable[[str, bytes], None], base_url: str,
                 listing_path: str = FRONT_PAGE, limit: int = 100,
                 frontier: PriorityFrontier | None = None, new_candidate_score: float = -1.0,
                 on_rejection: Callable[[Rejection], None] | None = None) -> None:
        self.source = source
        self.emit = emit
        self.on_rejection = on_rejection
        self.base_url = base_url
        self.listing_path = listing_path
        self.limit = limit
        self.frontier = frontier if frontier is not None else PriorityFrontier()
        self.new_candidate_score = new_candidate_score
        self.after: str | None = None
        self.pages = 0
        self.posts = 0
        self.priorities_applied = 0
        self.pushed: dict[str, Decision] = {}  # author -> what its latest pushed row said (model, version, rank)
        self._lock = threading.Lock()

    def page_url(self) -> str:
        query = {"limit": self.limit, **({"after": self.after} if self.after else {})}
        return urljoin(self.base_url, self.listing_path) + "?" + urlencode(query)

    def crawl_page(self) -> int:
        """Fetch and emit one page; returns the number of posts emitted. Raises the source's fetch error.

        A page refused for good (robots.txt, a 4xx: :func:`focuscrawl.fetch.errors.refusal_of`) goes to
        ``on_rejection`` and ends the pass: the next fetch starts again from the newest posts rather than
        asking for the same page forever."""
        url = self.page_url()
        try:
            body, warc = fetch_archived(self.source, url)
        except FetchError as exc:
            refusal = refusal_of(url, exc)
            if refusal is not None:
                self.after = None
                if self.on_rejection is not None:
                    self.on_rejection(refusal)
            raise
        fetched_at_ms = int(time.time() * 1000)
        parsed = parse_listing(body, url)  # rejections log and count themselves
        if self.on_rejection is not None:
            for rejection in parsed.rejections:
                self.on_rejection(rejection)
        for record in parsed.records:
            row = {**record, "listing_url": url, "fetched_at_ms": fetched_at_ms, **(warc_columns(warc) if warc else {}),
                   **LISTING_ORDER.columns()}
            self.emit(record["author"], json.dumps(row, ensure_ascii=False).encode())
            with self._lock:
                if record["author"] not in self.frontier:
                    self.frontier.update(record["author"], self.new_candidate_score)
        # At the end of the listing start again from the newest posts.
        self.after = parsed.after
        self.pages += 1
        self.posts += len(parsed.records)
        return len(parsed.records)

    def apply_priority(self, user: str, score: float | None) -> None:
        """A pushed priority (``None``: the user's record was deleted from the compacted topic)."""
        with self._lock:
            if score is None:
                self.frontier.discard(user)
            else:
                self.frontier.update(user, score)
            self.priorities_applied += 1

    def apply_pushed(self, user: str, row: dict | None) -> None:
        """A pushed row (``score`` with its push's ``model``, ``model_version``, ``rank`` and the ``method`` that
        ranked the users; None: deleted): :meth:`apply_priority`, and the push kept beside the author."""
        self.apply_priority(user, None if row is None else row["score"])
        with self._lock:
            if row is None:
                self.pushed.pop(user, None)
            else:
                self.pushed[user] = Decision.of_push("fue", str(row.get("method") or "pushed"), row)

    def next_pick(self) -> tuple[str, float] | None:
        """The candidate user the crawler would extract next, with its score (None when empty)."""
        with self._lock:
            return self.frontier.peek() if self.frontier else None

    def status(self) -> dict:
        head = self.next_pick()
        with self._lock:
            push = self.pushed.get(head[0]) if head else None
            return {
                "next_pick": head[0] if head else None,
                "next_pick_score": head[1] if head else None,
                # the push behind that score (none: a new candidate no push has ranked yet)
                "next_pick_model": push.model if push else None,
                "next_pick_model_version": push.model_version if push else None,
                "next_pick_rank": push.rank if push else None,
                "candidates": len(self.frontier),
                "pages": self.pages,
                "posts": self.posts,
                "priorities_applied": self.priorities_applied,
                "updated_at_ms": int(time.time() * 1000),
            }
