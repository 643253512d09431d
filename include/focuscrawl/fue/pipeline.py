"""The stream modules of focused user extraction, as plain objects the processes and the experiment wire.

Seed 000 (*Real-time focused extraction of social media users*) section III (Fig. 1, the architecture): a *Community Explorer*
reads the newest posts and comments of communities picked by a community chooser (random in the
paper, section II-B) and streams them; the *User Updater* folds them into per-user evidence and the
*User Chooser* ranks the candidates (``focuscrawl.fue.chooser``); each free *User Extractor* takes
the top user and reads its whole history, up to the site's cap (1000 items per listing on Reddit);
the *User Classifier* judges the history with the reference classifier (threshold 0.9) and the
verdict becomes a *stats event* (extraction time, simulated time, method, verdict).

No Kafka and no threads here: every module takes a :class:`RedditClient` (the project's
:class:`~focuscrawl.fetch.Fetcher` - robots, politeness, SSRF guard - plus the site's address)
and returns records; ``streaming/fue/`` runs each module as a Kafka process, and
``focuscrawl.experiments.fue`` runs them all in one process in lock-step with the world's clock.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from typing import Iterable, Iterator, Protocol, Sequence
from urllib.parse import quote, urlencode

import pyarrow as pa

from focuscrawl.crawl.listing_crawler import LISTING_ORDER
from focuscrawl.lake.decision import DECISION_COLUMNS, Decision
from focuscrawl.lake.delta_sink import LINEAGE_COLUMNS, RecordRejected
from focuscrawl.fetch.clock import parse_http_date
from focuscrawl.fetch.warc import warc_columns
from focuscrawl.fue.classifier import UserClassifier
from focuscrawl.fue.evidence import Post
from focuscrawl.fue.params import DEFAULT as FUE
from focuscrawl.parse.listing import parse_listing
from focuscrawl.core.records import JsonRecord, decode
from focuscrawl.core.registry import Registry
from focuscrawl.lake.tables import UNIT_INTERVAL, Column, table

POSTS_TOPIC = "focuscrawl.fue.posts"          # key = author (one user's evidence stays in one chooser), value = Post
EXTRACT_TOPIC = "focuscrawl.fue.extract"      # per method: extract_topic(); key = user, value = ExtractRequest
HISTORIES_TOPIC = "focuscrawl.fue.histories"  # key = user, value = History
STATS_TOPIC = "focuscrawl.fue.stats"          # key = user, value = StatsEvent
SCORES_TOPIC = "focuscrawl.fue.scores"        # per method: scores_topic(); compacted, pushed by pseudo-training


def extract_topic(method: str) -> str:
    """The topic a method's chooser sends its chosen users to and its extractors read."""
    return f"{EXTRACT_TOPIC}.{method}"


def scores_topic(method: str) -> str:
    """The compacted topic pseudo-training pushes a method's user scores to and its chooser follows."""
    return f"{SCORES_TOPIC}.{method}"


DELETED_AUTHORS = frozenset({"[deleted]", "AutoModerator", ""})
USER_PAGE_LIMIT = 100  # Reddit's largest page
SITE_CAP = 1000        # Reddit lists no more than 1000 items per user listing

STATS_TABLE = table(
    "fue_extractions",
    "One row per user extracted in full and judged by the reference classifier (seed 000, section III "
    "stats and II-A metrics): method, simulated and wall time, history size, verdict. Harvest ratio = "
    "avg(relevant) per method.",
    [
        Column("run_id", pa.string(), "experiment or deployment run the extraction belongs to", nullable=False),
        Column("method", pa.string(), "prioritisation method that chose the user (RND, HCP, ...)", nullable=False),
        Column("user", pa.string(), "extracted user name", nullable=False),
        Column("sim_time", pa.float64(), "simulated seconds since the run started when the verdict was made", nullable=False),
        Column("sim_epoch", pa.float64(), "simulated Unix epoch seconds of the verdict"),
        Column("extraction_seconds", pa.float64(), "wall seconds the extractor spent on the user's history"),
        Column("items", pa.int64(), "posts and comments read from the history"),
        Column("pages", pa.int64(), "listing pages fetched for the history"),
        Column("probability", pa.float64(), "reference classifier's probability of the whole history",
               bounds=UNIT_INTERVAL),
        Column("relevant", pa.bool_(), "probability above the reference threshold (0.9)", nullable=False),
        Column("history_text", pa.string(), "the history as judged (pseudo-training reads it back)"),
        *LINEAGE_COLUMNS,
        *DECISION_COLUMNS,
    ],
    partition_by=("method",),
)


# -- the site ---------------------------------------------------------------------------------


class RedditClient:
    """Reddit-format listings through a :class:`~focuscrawl.fetch.Fetcher` (robots, politeness, guard)."""

    def __init__(self, fetcher, base_url: str) -> None:
        self.fetcher = fetcher
        self.base_url = base_url.rstrip("/")
        self.requests = 0
        self.site_time: float | None = None  # the site's Date on the last listing (its clock, not ours)
        self.warc = None  # the last listing's WARC record (focuscrawl.fetch.warc.WarcRef), when archived
        self.fetched: tuple[str, int] | None = None  # the last listing's URL and fetch time (epoch ms)

    def listing(self, path: str, **params) -> tuple[list[dict], str | None]:
        """Records and the ``after`` cursor of one listing page (malformed children are dropped)."""
        query = urlencode({k: v for k, v in params.items() if v is not None})
        # A path may bring its own query (a project's listing_path such as "/r/all/new.json?raw_json=1").
        url = f"{self.base_url}{path}" + (("&" if "?" in path else "?") + query if query else "")
        self.requests += 1
        result = self.fetcher.fetch(url, accept=["application/json"])
        self.site_time = parse_http_date(result.headers.get("Date")) or self.site_time
        self.warc = result.warc
        self.fetched = (url, int(time.time() * 1000))
        parsed = parse_listing(result.body, url)
        return parsed.records, parsed.after


def post_of(record: dict, warc=None, fetched: tuple[str, int] | None = None, chosen_by: str = "") -> Post | None:
    """A listing record (``t3`` post or ``t1`` comment) as evidence about its author; ``warc``: the
    listing response's WARC record (:attr:`RedditClient.warc`), ``fetched`` its URL and fetch time
    (:attr:`RedditClient.fetched`) and ``chosen_by`` what chose that read, carried to the post's row."""
    author = record.get("author", "")
    if author in DELETED_AUTHORS:
        return None
    return Post(
        author=author,
        created_utc=float(record["created_utc"]),
        score=float(record.get("score") or 0),
        num_comments=float(record.get("num_comments") or 0),
        title=record.get("title") or "",
        text=record.get("selftext") or record.get("body") or "",
        community=record.get("subreddit") or "",
        post_id=record.get("name") or "",
        warc=tuple(warc) if warc is not None else None,
        listing_url=fetched[0] if fetched else "",
        fetched_at_ms=fetched[1] if fetched else 0,
        chosen_by=chosen_by,
    )


def post_to_json(post: Post) -> bytes:
    # Post is flat: reading its slots is ~10x faster than dataclasses.asdict (a week's run encodes millions).
    return json.dumps({f: getattr(post, f) for f in Post.__slots__}).encode()


def post_from_json(value: bytes) -> Post:
    """A :data:`POSTS_TOPIC` value as a :class:`Post`, each field checked (:class:`~focuscrawl.core.records.RecordError`
    names a missing or mistyped one); ``warc`` comes back a hashable tuple."""
    return decode(Post, value)


def post_row(record) -> dict:
    """A ``focuscrawl.fue.posts`` record as a ``reddit_posts`` row: the FUE loop's own landed posts,
    which ``fue_pseudo_training`` re-scores as waiting candidates (seed 000, section V)."""
    try:
        post = post_from_json(record.value)
    except (TypeError, ValueError) as exc:
        raise RecordRejected(f"not a FUE post: {exc}") from None
    kind, sep, thing_id = post.post_id.partition("_")
    if not sep or not thing_id:
        raise RecordRejected(f"post of {post.author!r} has no fullname (t3_<id>/t1_<id>): {post.post_id!r}")
    return {"name": post.post_id, "id": thing_id, "kind": kind, "author": post.author, "subreddit": post.community,
            "title": post.title, "selftext": post.text, "score": int(post.score), "num_comments": int(post.num_comments),
            "created_utc": post.created_utc, **(warc_columns(post.warc) if post.warc else {}),
            **({"listing_url": post.listing_url, "fetched_at_ms": post.fetched_at_ms} if post.listing_url else {}),
            **(Decision("fue", post.chosen_by).columns() if post.chosen_by else {})}


# -- Community Explorer -----------------------------------------------------------------------

COMMUNITY_CHOOSERS: Registry["CommunityChooser"] = Registry("community chooser")


class CommunityChooser(Protocol):
    """Which known community to read next. ``next(communities)`` is pure apart from its own RNG."""

    seed: int

    def next(self, communities: Sequence[str]) -> str:
        """One of ``communities``; a ValueError when there is none."""
        ...


class _Chooser:
    """What the choosers share: a seed, and the refusal of an empty list."""

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = seed

    @staticmethod
    def _known(communities: Sequence[str]) -> Sequence[str]:
        if not communities:
            raise ValueError("no community known yet to choose from: discover some first (the front page lists them)")
        return communities


@COMMUNITY_CHOOSERS.register("RANDOM")
class RandomCommunityChooser(_Chooser):
    """Uniformly random, as in the paper (section II-B); seeded, so runs are repeatable."""

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self._rng = random.Random(seed)

    def next(self, communities: Sequence[str]) -> str:
        return communities[self._rng.randrange(len(self._known(communities)))]


@COMMUNITY_CHOOSERS.register("ROUND-ROBIN")
class RoundRobinCommunityChooser(_Chooser):
    """Every known community in turn: equal coverage, no randomness."""

    def __init__(self, *, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self._i = seed

    def next(self, communities: Sequence[str]) -> str:
        known = sorted(self._known(communities))
        self._i += 1
        return known[self._i % len(known)]


class SentPosts:
    """The ids of the posts an explorer has sent, the ``capacity`` most recent (the oldest is forgotten first).

    Listings overlap (the front page lists every community's new posts, and a community's listing keeps
    the posts it showed last time), so without it every read re-sends its whole page. The memory is of
    ids, not a ``before`` cursor: a cursor's post may be deleted, and a community read is one page
    anyway. A post forgotten and listed again is sent again: harmless, as every User
    Updater counts a post id once (``EvidenceAggregator``), and rare while ``capacity`` holds far more
    than the listings show at once (a read shows at most 100).
    """

    def __init__(self, capacity: int = 100_000) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._ids: dict[str, None] = {}  # insertion-ordered: the oldest first

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, post_id: object) -> bool:
        return post_id in self._ids

    def add(self, post_id: str) -> None:
        """``post_id`` was sent (a post without an id cannot be told apart and is not remembered)."""
        if post_id and post_id not in self._ids:
            self._ids[post_id] = None
            if len(self._ids) > self.capacity:
                del self._ids[next(iter(self._ids))]


class CommunityExplorer:
    """Reads the front page (``listing_path``: reddit's ``/r/all/new.json``) and ``/r/{sub}/new.json`` and
    ``/r/{sub}/comments.json`` of chosen communities, and hands out the posts and comments not sent before
    (:class:`SentPosts`).

    Communities are discovered from the front page (every post names its community), so the explorer
    needs no list up front. Two paces (:meth:`due`): the front page every ``front_page_interval``
    seconds, start to start, since every new post shows there first; a community visit
    ``visit_interval`` seconds after the previous one. ``visit()`` reads one of each at once (the
    lock-step experiment).

    A front-page read pages back (``after``) until it meets a post the previous read showed, so a burst of
    more new posts than one page holds between two reads is seen whole, down to the 1000 posts a listing
    reaches (:data:`SITE_CAP`); the first read is one page.
    """

    def __init__(self, client: RedditClient, chooser: CommunityChooser, limit: int = USER_PAGE_LIMIT, *,
                 listing_path: str = FUE.listing_path, front_page_interval: float = FUE.front_page_interval,
                 visit_interval: float = FUE.visit_interval, sent: SentPosts | None = None,
                 clock=time.monotonic) -> None:
        self.client = client
        self.chooser = chooser
        self._chosen_by = COMMUNITY_CHOOSERS.name_of(chooser)  # what each community read's posts name as their chooser
        self.limit = limit
        self.listing_path = listing_path
        self.communities: list[str] = []
        self.front_page_interval = front_page_interval
        self.visit_interval = visit_interval
        self.sent = sent if sent is not None else SentPosts()
        self.clock = clock
        self.reads = {"front_page": 0, "visits": 0}
        self.front_page_pages = 0  # pages read by the front-page reads (a burst takes more than one)
        self._front_shown: set[str] = set()  # the fullnames the last front-page read showed
        self._front_due = self._visit_due = float("-inf")  # both due at once
        self._visit: list[str] = []  # the current community visit's listings still to read

    def add_communities(self, names: Iterable[str]) -> int:
        """Communities found elsewhere (in extracted histories, Algorithm 1) join the frontier; how many were new."""
        known = set(self.communities)
        new = [n for n in dict.fromkeys(names) if n and n not in known]
        self.communities.extend(new)
        return len(new)

    def discover(self) -> list[Post]:
        """Read the front page, paging back to the posts the previous read showed: its new communities join the
        frontier; its posts not sent before (they count as sent when handed out by :meth:`listings` or :meth:`due`)."""
        records, after = self.client.listing(self.listing_path, limit=self.limit)
        posts, read, pages = self._posts(records, LISTING_ORDER.method), list(records), 1
        previous = self._front_shown
        while (previous and after and pages * self.limit < SITE_CAP
               and not any(r.get("name") in previous for r in records)):
            records, after = self.client.listing(self.listing_path, limit=self.limit, after=after)
            posts += self._posts(records, LISTING_ORDER.method)  # each page's posts name that page's WARC record
            read += records
            pages += 1
        self._front_shown = {r["name"] for r in read if r.get("name")}
        self.reads["front_page"] += 1
        self.front_page_pages += pages
        known = set(self.communities)
        for sub in (r.get("subreddit") for r in read):
            if sub and sub not in known:
                known.add(sub)
                self.communities.append(sub)
        return posts

    def _community_listings(self) -> list[str]:
        """The listings of one visit to a chosen community (section II-B: its latest posts and comments)."""
        sub = quote(self.chooser.next(self.communities))
        return [f"/r/{sub}/{kind}.json" for kind in ("new", "comments")]

    def _read(self, path: str) -> list[Post]:
        records, _ = self.client.listing(path, limit=self.limit)
        return self._posts(records, self._chosen_by)

    def listings(self) -> Iterator[list[Post]]:
        """One visit, a listing at a time: the front page (which also finds new communities), then one chosen
        community's newest posts and comments. Each listing's posts come as soon as it is parsed, so a
        publisher need not hold them for the visit's later requests (evidence latency)."""
        yield from self._hand_out(self.discover())
        if not self.communities:
            return
        for path in self._community_listings():
            yield from self._hand_out(self._read(path))
        self.reads["visits"] += 1

    def visit(self) -> list[Post]:
        """One visit's posts and comments, all its listings read (:meth:`listings`)."""
        return [post for posts in self.listings() for post in posts]

    def due(self) -> Iterator[list[Post]]:
        """The listings due now, a listing at a time: the front page when its period is up, then the next
        listing of the community visit under way or due. Call again after :meth:`until_due` seconds.

        A community listing is read between two front-page reads whenever a visit is due, so neither pace
        starves the other (even with a period of 0); a failed read is not retried before its next turn.
        """
        if self.clock() >= self._front_due:
            self._front_due = self.clock() + self.front_page_interval
            yield from self._hand_out(self.discover())
        if not self._visit and self.communities and self.clock() >= self._visit_due:
            self._visit = self._community_listings()
        if self._visit:
            path = self._visit.pop(0)
            last = not self._visit
            if last:
                self._visit_due = self.clock() + self.visit_interval
            posts = self._read(path)
            self.reads["visits"] += last
            yield from self._hand_out(posts)

    def until_due(self) -> float:
        """Seconds until :meth:`due` has a listing to read (0: now)."""
        if self._visit:
            return 0.0
        due = min(self._front_due, self._visit_due if self.communities else float("inf"))
        return max(0.0, due - self.clock())

    def _posts(self, records: list[dict], chosen_by: str) -> list[Post]:
        """The listing just read as the posts not sent before, each naming that listing's WARC record, URL and
        fetch time (a client without them, such as a test double, names none) and what chose the read:
        the front page's own order (``listing_order``, as the listing crawler's) or the community chooser."""
        warc, fetched = getattr(self.client, "warc", None), getattr(self.client, "fetched", None)
        return [p for p in (post_of(r, warc, fetched, chosen_by) for r in records)
                if p is not None and p.post_id not in self.sent]

    def _hand_out(self, posts: list[Post]) -> Iterator[list[Post]]:
        """Yield ``posts``; they count as sent once the caller asks for what comes next. A caller whose send
        failed stops asking, so its posts are not forgotten: the next read of their listing offers them again."""
        yield posts
        for post in posts:
            self.sent.add(post.post_id)


# -- User Extractor ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExtractRequest(JsonRecord):
    """A :data:`EXTRACT_TOPIC` message: the user a chooser picked, and the method that picked it."""

    user: str
    method: str = ""
    chosen: Decision | None = None  # what chose the user: the pushed model, version, score and rank, if one did


@dataclass(frozen=True, slots=True)
class History(JsonRecord):
    """A user's extracted history: every text read, and what reading it cost."""

    user: str
    texts: tuple[str, ...]
    pages: int
    seconds: float
    method: str = ""  # the method that chose the user (set by a stream extractor)
    communities: tuple[str, ...] = ()  # communities the history's items were posted in (for the explorer)
    fetched_at: float | None = None  # site time the history was read at: the last response's Date, else its newest item
    chosen: Decision | None = None  # what chose the user (the extract request's), landed with the verdict

    @property
    def text(self) -> str:
        return "\n".join(self.texts)


class UserExtractor:
    """Reads ``/user/{name}/submitted.json`` and ``comments.json`` page by page, up to ``cap`` each.

    The fetcher obeys robots.txt, per-host politeness and ``Retry-After`` on 429, so an
    extractor never outruns the site's rate limit.
    """

    def __init__(self, client: RedditClient, cap: int = SITE_CAP, page_limit: int = USER_PAGE_LIMIT) -> None:
        self.client = client
        self.cap = cap
        self.page_limit = page_limit

    def extract(self, user: str) -> History:
        started = time.monotonic()
        texts: list[str] = []
        communities: dict[str, None] = {}
        newest: float | None = None
        pages = 0
        for kind in ("submitted", "comments"):
            after, seen = None, 0
            while seen < self.cap:
                records, after = self.client.listing(
                    f"/user/{quote(user)}/{kind}.json", limit=min(self.page_limit, self.cap - seen), after=after)
                pages += 1
                seen += len(records)
                for r in records:
                    post = post_of(r)
                    if post is not None and post.body:
                        texts.append(post.body)
                    if post is not None and post.community:
                        communities[post.community] = None
                    if post is not None:
                        newest = post.created_utc if newest is None else max(newest, post.created_utc)
                if not after or not records:
                    break
        # Timed by the site (seed 000, section III: a verdict is made when the history has been read):
        # the last response's Date, else the newest item read (the site's now is no earlier).
        fetched_at = getattr(self.client, "site_time", None) or newest
        return History(user, tuple(texts), pages, time.monotonic() - started, communities=tuple(communities),
                       fetched_at=fetched_at)


# -- User Classifier and stats ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatsEvent(JsonRecord):
    """A judged extraction: one row of :data:`STATS_TABLE` (without the Kafka lineage)."""

    run_id: str
    method: str
    user: str
    sim_time: float
    sim_epoch: float
    extraction_seconds: float
    items: int
    pages: int
    probability: float
    relevant: bool
    history_text: str = ""
    chosen: Decision | None = None  # what chose the user, landed as the table's chosen_* columns


class ReferenceJudge:
    """The seed's User Classifier: the reference classifier on the whole history, threshold 0.9."""

    def __init__(self, classifier: UserClassifier, threshold: float = FUE.reference_threshold,
                 keep_text_chars: int = 20_000) -> None:
        self.classifier = classifier
        self.threshold = threshold
        self.keep_text_chars = keep_text_chars

    def judge(self, history: History, *, run_id: str, method: str, sim_time: float, sim_epoch: float) -> StatsEvent:
        p = self.classifier.proba(history.text)
        return StatsEvent(run_id=run_id, method=method, user=history.user, sim_time=sim_time, sim_epoch=sim_epoch,
                          extraction_seconds=history.seconds, items=len(history.texts), pages=history.pages,
                          probability=p, relevant=p > self.threshold,
                          history_text=history.text[-self.keep_text_chars:], chosen=history.chosen)


def stats_row(record) -> dict:
    """A :data:`STATS_TOPIC` record as a :data:`STATS_TABLE` row, read as the :class:`StatsEvent` it must be:
    a malformed verdict is dead-lettered naming its field (the chooser refuses the same record)."""
    try:
        event = StatsEvent.from_json(record.value)
    except ValueError as exc:
        raise RecordRejected(f"not a FUE verdict: {exc}") from None
    row = asdict(event)
    del row["chosen"]
    return {**row, **(event.chosen.columns() if event.chosen is not None else {})}


class VerdictTimes:
    """When each verdict was made, on the site's clock, from the records alone (no evaluation port).

    A history carries ``fetched_at``, the site time it was read at (the last response's ``Date``,
    else its newest item's ``created_utc``). ``sim_epoch`` is that time, ``sim_time`` the seconds
    since ``run_start`` (given, or the first history's time). Seed 000, section III: the harvest
    curve is users judged relevant against time spent crawling.
    """

    def __init__(self, run_start: float | None = None) -> None:
        self.run_start = run_start

    def __call__(self, history: History) -> tuple[float, float]:
        """``(sim_time, sim_epoch)`` of the verdict on ``history``."""
        if history.fetched_at is None:
            raise ValueError(f"the history of {history.user} carries no fetched_at (site time); "
                             "it was extracted by an older extractor: extract the user again")
        if self.run_start is None:
            self.run_start = float(history.fetched_at)
        return float(history.fetched_at) - self.run_start, float(history.fetched_at)


def candidate_texts(chooser, top_n: int) -> list[tuple[str, str, float]]:
    """``(user, evidence text, score)`` of a chooser's best waiting candidates (pseudo-training input)."""
    return [(user, chooser.evidence.get(user).text, score) for user, score in chooser.top(top_n)]


def events_of(rows: Iterable[dict]):
    """Stats rows (from the Delta table or the bus) as metric events."""
    from focuscrawl.fue.metrics import Extraction

    return [Extraction(r["method"], r["user"], float(r["sim_time"]), bool(r["relevant"])) for r in rows]
