"""The social site's population: users with a hidden label, communities, histories and a live stream.

Seed 000 (*Real-time focused extraction of social media users*), sections II-IV: candidate users surface in community
listings; a user is on-target per a reference classifier over the whole history. The world's
signals come from data or are neutral, never from the paper's verdicts: the words are
real eRisk writings (or generated text), posting hours are the donors' real ones (the ``<DATE>``
of their writings), and score and comment counts, for which no per-class data exists, are drawn
from one class-independent distribution; so is the community an item lands in (no per-class
community data exists either). ``community_signal``, ``score_effect``, ``comments_effect`` and
``hour_effect`` stay as explicit sensitivity parameters (0 by default) for sweeps.

Everything is a pure function of the seed: user ``i``'s label, activity and history come from
``(seed, i)`` and are built only when asked for, so 100k users cost milliseconds; the live stream
is built one simulated bucket at a time from ``(seed, bucket)``.

Ids grow with creation time, as reddit's base36 ids do (a new thing gets the next number): an id is
``(created - origin) x slots + slot``, the slot telling apart the things of one second (a history
item's ``(user, index)``, a live item's rank in its second), so an id also names where its thing is
built from. A comment answers a post of its own community, as on reddit: a live comment the newest
post of its community (or, one time in three when that post has comments, one of them: reply
chains drawn from a hash of the id, not from the stream's generator); a history comment, and a
live one whose community has no live post yet, a thread whose author deleted the account (author
``[deleted]``, so it shows in no user's listing), ten minutes before it.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import random
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from focuscrawl.core.corpora import Corpus

TARGET_RICH = ("depression", "SuicideWatch", "Anxiety", "lonely", "mentalhealth")
GENERAL = (
    "AskReddit", "pics", "funny", "gaming", "worldnews", "todayilearned", "movies", "news", "aww",
    "science", "Music", "videos", "books", "sports", "technology", "Fitness", "food", "personalfinance",
    "relationships", "CasualConversation", "explainlikeimfive", "IAmA", "LifeProTips", "history",
    "space", "DIY", "gadgets", "Art", "travel", "programming",
)
_ADJ = "quiet bold lazy happy brave calm eager fuzzy gentle jolly kind lucky noisy proud silly witty".split()
_NOUN = "river tiger falcon maple comet otter pixel rocket walrus cactus badger lemon panda wizard".split()

MAX_HISTORY = 4096          # generated history items per user (listings serve the newest 1000, as Reddit)
DELETED = -1                # the user of a thread whose author deleted the account
THREAD_LEAD = 600           # seconds a deleted thread precedes the comment answering it


@dataclass(frozen=True)
class PopulationConfig:
    """Knobs of the social world. Where each default comes from (none from a paper's verdict):

    - ``users``, ``base_rate``: the world's size and share of on-target users; a choice (the
      seed does not report Reddit's base rate). 2% gives RND a few relevant users per hundred.
    - ``start_epoch``: an arbitrary fixed date (2023-11-14), so runs are repeatable.
    - ``history_days``, ``mean_history``: pre-start histories over one year, 30 items on average
      (exponential x activity, heavy-tailed: some exceed the 1000-item cap), so a history costs a
      few listing pages. A cost choice; eRisk subjects average 607 writings, but they were
      selected for long histories, so their counts say little about a random Reddit user.
    - ``donors_per_user``: each world user re-posts the writings of 2 same-class donors, so 100k
      users can be composed from a few hundred real subjects without being exact copies.
    - ``community_noise``: the chance that any user's item lands in one of the target-rich
      communities (0.004, whatever the user's class): a choice, so that those listings hold items
      at all; eRisk has no community names, so no data says more.
    - ``community_signal``: the extra chance for a positive user's item: positives land there with
      ``community_noise + community_signal``. 0 by default, i.e. neutral: a community's share of
      positives is the base rate, and the community rate (all HCP-CB adds to HCP) carries no
      information. Nonzero values are sensitivity settings (``--world community_signal=...``);
      0.246 reproduces the 0.25 this world assumed before: at the 2% base rate a target-rich
      community's items are then 56% from positives, against 2% at 0.
    - ``score_effect``, ``comments_effect``: shifts of the positives' log-score and log-comment
      count. 0 by default: no real per-class data exists (eRisk has neither), so both classes
      share one distribution; nonzero values are sensitivity settings (``--world score_effect=...``).
    - ``hour_effect``: extra activity of positives near 06:00 UTC on top of the donors' real hour
      profiles. 0 by default (the hours come from the real timestamps); a sensitivity setting. With
      a generated corpus (no timestamps) both classes share one evening-peaked profile.
    - ``events_per_minute``, ``bucket_seconds``, ``warmup_seconds``: stream volume (a day's average:
      the volume of each hour follows the users' hour profiles) and its
      generation granularity; chosen for a laptop, not from Reddit's volume.
    """

    seed: int = 0
    users: int = 100_000
    base_rate: float = 0.02            # share of positive (on-target) users
    start_epoch: float = 1_700_000_000.0
    history_days: float = 365.0        # pre-start histories spread over this many days
    mean_history: float = 30.0         # mean items per user history (heavy-tailed; some exceed 1000)
    donors_per_user: int = 2           # same-class real (or generated) donors composing one world user
    community_signal: float = 0.0      # extra chance of a positive's item there (sensitivity; 0 = no information)
    community_noise: float = 0.004     # chance any user's item lands in a target-rich community (a choice)
    extra_communities: int = 70        # generated communities beyond the real names
    score_effect: float = 0.0          # log-score shift for positives (sensitivity; 0 = class-independent)
    comments_effect: float = 0.0       # log-comments shift for positives (sensitivity; 0 = class-independent)
    hour_effect: float = 0.0           # extra activity of positives near 06:00 UTC (sensitivity; 0 = none)
    events_per_minute: float = 60.0    # new posts + comments per simulated minute
    bucket_seconds: int = 60           # the live stream is generated per bucket of simulated time
    warmup_seconds: float = 3600.0     # the stream starts this long before start_epoch (listings not empty)

    def __post_init__(self) -> None:
        if not (0.0 <= self.community_noise and 0.0 <= self.community_signal
                and self.community_noise + self.community_signal <= 1.0):
            raise ValueError(f"community_noise={self.community_noise} and community_signal={self.community_signal}: "
                             "both must be >= 0 and their sum (a positive's chance) at most 1")


SENSITIVITY_PARAMETERS = ("score_effect", "comments_effect", "hour_effect", "community_signal", "community_noise")


def hidden_labels(seed: int, users: int, base_rate: float) -> np.ndarray:
    """The world's ground truth: which of ``users`` users are on-target (a pure function of the three).

    The evaluation side recomputes it from a run's parameters (``focuscrawl report fue``).
    """
    rng = np.random.default_rng(seed)
    labels = np.zeros(users, dtype=bool)
    labels[rng.permutation(users)[: round(users * base_rate)]] = True
    return labels


@dataclass(frozen=True)
class Item:
    """A post (``t3``) or comment (``t1``); ``final_*`` are reached as it ages (see :meth:`Population.score_at`)."""

    num: int            # id number (base36 on the wire)
    user: int
    kind: str           # "t3" | "t1"
    community: int
    created: int
    title: str
    text: str
    final_score: int
    final_comments: int
    link_num: int       # the post a comment answers (its own num for a post)
    parent_num: int = -1  # what a comment answers: its post or a comment of it (-1 for a post)


def base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


class Population:
    """Users, communities and the live stream of one seeded social world."""

    def __init__(self, config: PopulationConfig, corpus: Corpus) -> None:
        self.config = c = config
        self.corpus = corpus
        rng = np.random.default_rng(c.seed)
        n = c.users
        self.labels = hidden_labels(c.seed, n, c.base_rate)
        rng.permutation(n)  # hidden_labels drew this permutation from the same generator
        self.activity = rng.lognormal(0.0, 1.0, n)
        # Plain lists: per-item lookups from Python are several times faster than numpy scalars.
        self._label = self.labels.tolist()
        self._cum_activity = np.cumsum(self.activity).tolist()
        draws = rng.random((n, c.donors_per_user))
        sizes = np.where(self.labels, corpus.donors(True), corpus.donors(False))[:, None]
        self._donors = (draws * sizes).astype(np.int64).tolist()
        # The donors' real hour profiles (24 weights of mean 1), None for a corpus without times.
        profile = getattr(corpus, "hour_profile", lambda label, donor: None)
        self._donor_hours: dict[bool, list[list[float]] | None] = {}
        for label in (True, False):
            rows = [profile(label, d) for d in range(corpus.donors(label))]
            self._donor_hours[label] = None if any(r is None for r in rows) else [r.tolist() for r in rows]
        peaks = [max(max(r) for r in rows) for rows in self._donor_hours.values() if rows]
        self._max_hour_weight = (max(peaks) if peaks else 1.0) * (1 + c.hour_effect)
        self._hourly_volume = self._volume_by_hour()
        self.communities = list(TARGET_RICH) + list(GENERAL) + [f"sub{k:03d}" for k in range(c.extra_communities)]
        self._community_index = {s.lower(): k for k, s in enumerate(self.communities)}
        # Zipf popularity over the general communities.
        general = len(self.communities) - len(TARGET_RICH)
        weights = 1.0 / np.arange(1, general + 1)
        self._general_cum = np.cumsum(weights / weights.sum())
        self._stream_lock = threading.Lock()
        self._built_until = math.floor((c.start_epoch - c.warmup_seconds) / c.bucket_seconds)
        self._stream: list[Item] = []                 # all live items in time order; index = num
        self._times: list[int] = []
        self.posts_by_community: dict[int, list[int]] = {}
        self.comments_by_community: dict[int, list[int]] = {}
        self.posts_all: list[int] = []
        self.comments_all: list[int] = []
        self.by_user: dict[int, list[int]] = {}
        self._by_id: dict[int, Item] = {}             # live items by id
        self.threads: dict[int, list[int]] = {}       # a live post's comments, in time order
        # Ids: (created - origin) x slots + slot. History items take slots [0, users x MAX_HISTORY), the
        # deleted threads they answer the same again above, live items their rank in their second.
        self._id_slots = 2 * c.users * MAX_HISTORY
        end = c.start_epoch - c.warmup_seconds
        self._id_origin = (math.floor((end - c.history_days * 86400) / 86400) - 1) * 86400

    # ids -------------------------------------------------------------------------------------------
    def thing_id(self, created: int, slot: int) -> int:
        """The id of the thing created at ``created`` in ``slot`` (ids grow with creation time)."""
        return (int(created) - self._id_origin) * self._id_slots + slot

    def created_of(self, num: int) -> int:
        """The creation second an id encodes."""
        return self._id_origin + num // self._id_slots

    def _thread_of(self, comment: int) -> int:
        """The id of the deleted thread answered by the comment ``comment`` (its slot shifted up, ten minutes earlier)."""
        return comment - THREAD_LEAD * self._id_slots + self.config.users * MAX_HISTORY

    def comment_of_thread(self, thread: int) -> int:
        """The id of the comment that answers the deleted thread ``thread`` (:meth:`_thread_of` undone)."""
        return thread + THREAD_LEAD * self._id_slots - self.config.users * MAX_HISTORY

    # users ---------------------------------------------------------------------------------------
    def name(self, i: int) -> str:
        h = (i * 2654435761 + self.config.seed) & 0xFFFFFFFF
        return f"{_ADJ[h % len(_ADJ)]}_{_NOUN[(h >> 8) % len(_NOUN)]}_{i}"

    def user_index(self, name: str) -> int | None:
        """The user named ``name``, in any letter case (reddit's user names are case-insensitive)."""
        try:
            i = int(name.rsplit("_", 1)[1])
        except (IndexError, ValueError):
            return None
        return i if 0 <= i < self.config.users and self.name(i).lower() == name.lower() else None

    def community_index(self, name: str) -> int | None:
        return self._community_index.get(name.lower())

    def _user_rng(self, i: int, stream: int = 0) -> random.Random:
        return random.Random(((self.config.seed * 7 + stream) * 10_000_019) + i)

    def donors(self, i: int) -> list[int]:
        """The same-class corpus donors whose writings user ``i`` re-posts."""
        return self._donors[i]

    def _pick_community(self, label: bool, rng: random.Random) -> int:
        c = self.config
        if rng.random() < c.community_noise + (c.community_signal if label else 0.0):
            return rng.randrange(len(TARGET_RICH))
        return len(TARGET_RICH) + min(bisect.bisect_left(self._general_cum, rng.random()), len(self._general_cum) - 1)

    def _features(self, label: bool, kind: str, rng: random.Random) -> tuple[int, int]:
        c = self.config
        score = int(rng.lognormvariate(1.5 + (c.score_effect if label else 0.0), 1.2))
        comments = int(rng.lognormvariate(1.0 + (c.comments_effect if label else 0.0), 1.1)) if kind == "t3" else 0
        return score, comments

    def _writing_item(self, i: int, rng: random.Random, slot: int, day: int | None, created: int = 0) -> Item:
        """A re-posted donor writing; with ``day`` (history) it keeps its real time of day when the corpus has one.
        A comment answers the deleted thread ten minutes before it (the live stream may give it a live post)."""
        label = self._label[i]
        donor = rng.choice(self._donors[i])
        title, text, sod = self.corpus.writing(label, donor, rng.randrange(self.corpus.size(label, donor)))
        if day is not None:
            created = min(int(self.config.start_epoch - self.config.warmup_seconds) - 1,
                          day * 86400 + (sod if sod >= 0 else self._history_second_of_day(label, rng)))
        kind = "t3" if title else "t1"
        score, comments = self._features(label, kind, rng)
        community = self._pick_community(label, rng)
        num = self.thing_id(created, slot)
        if kind == "t3":
            return Item(num, i, kind, community, created, title, text, score, comments, num)
        thread = self._thread_of(num)
        return Item(num, i, kind, community, created, title, text, score, comments, thread, thread)

    def deleted_thread(self, comment: Item) -> Item:
        """The post whose author deleted the account that ``comment`` answers: in its community, ten minutes earlier."""
        return Item(comment.link_num, DELETED, "t3", comment.community, comment.created - THREAD_LEAD,
                    "[deleted]", "[deleted]", 1, 1, comment.link_num)

    @lru_cache(maxsize=4096)
    def history(self, i: int) -> tuple[Item, ...]:
        """User ``i``'s writings before the stream began, oldest first (a pure function of seed and i)."""
        c = self.config
        rng = self._user_rng(i, 2)
        n = min(MAX_HISTORY, 1 + int(rng.expovariate(1.0) * c.mean_history * self.activity[i]))
        end = c.start_epoch - c.warmup_seconds
        items = []
        for j in range(n):
            day = math.floor((end - rng.random() * c.history_days * 86400) / 86400)
            items.append(self._writing_item(i, rng, i * MAX_HISTORY + j, day))
        items.sort(key=lambda it: (it.created, it.num))
        return tuple(items)

    def _history_second_of_day(self, label: bool, rng: random.Random) -> int:
        # Generated corpus (no real times): one evening-peaked profile for both classes; with the
        # hour_effect sensitivity setting, positives lean towards 06:00.
        c = self.config
        hours = rng.gauss(6.0, 3.0) if label and rng.random() < c.hour_effect / (1 + c.hour_effect) else rng.gauss(17.0, 5.0)
        return int(hours * 3600) % 86400

    # live stream ----------------------------------------------------------------------------------
    def _hour_weight(self, i: int, t: float) -> float:
        """Relative activity of user ``i`` at time ``t``: its donors' real hour profile (1 without
        times), times ``1 + hour_effect`` near 06:00 for positives (sensitivity setting)."""
        label = self._label[i]
        h = (t % 86400) / 3600
        rows = self._donor_hours[label]
        w = 1.0
        if rows is not None:
            donors = self._donors[i]
            w = sum(rows[d][int(h)] for d in donors) / len(donors)
        if label and self.config.hour_effect:
            w *= 1 + self.config.hour_effect * math.exp(-(min(abs(h - 6), 24 - abs(h - 6)) ** 2) / 8)
        return w

    def _volume_by_hour(self) -> list[float]:
        """The stream's relative volume in each hour of the day (mean 1): the activity-weighted sum of every
        user's hour profile, so that each user posts at rate ``activity x weight(hour)`` and its posting
        hours follow its donors' real ones (thinning alone would only say who posts, not how much)."""
        c = self.config
        total = np.zeros(24)
        activity = self.activity
        for label in (True, False):
            users = np.flatnonzero(self.labels == label)
            rows = self._donor_hours[label]
            if rows is None:
                profile = np.ones((len(users), 24))
            else:
                table = np.asarray(rows)
                donors = np.asarray([self._donors[i] for i in users], dtype=np.int64).reshape(len(users), -1)
                profile = table[donors].mean(axis=1)
            if label and c.hour_effect:
                h = np.arange(24) + 0.5
                d = np.minimum(np.abs(h - 6), 24 - np.abs(h - 6))
                profile = profile * (1 + c.hour_effect * np.exp(-(d ** 2) / 8))
            total += (activity[users, None] * profile).sum(axis=0)
        return (total / total.mean()).tolist() if total.mean() > 0 else [1.0] * 24

    def advance(self, now: float) -> None:
        """Materialise every stream bucket that ends at or before ``now`` (idempotent, thread-safe)."""
        c = self.config
        last = math.floor(now / c.bucket_seconds) - 1
        if last <= self._built_until:
            return
        with self._stream_lock:
            for b in range(self._built_until + 1, last + 1):
                self._build_bucket(b)
                self._built_until = b

    def _build_bucket(self, b: int) -> None:
        c = self.config
        rng = random.Random((c.seed * 10_000_019 + 3) * 1_000_000_007 + b)
        hour = int((b * c.bucket_seconds) % 86400 // 3600)
        lam = c.events_per_minute * c.bucket_seconds / 60 * self._hourly_volume[hour]  # a day-average rate
        # Poisson count by inversion (lam is moderate): exact and seedable.
        n, p, u = 0, math.exp(-lam), rng.random()
        cdf = p
        while u > cdf and n < 10 * lam + 50:
            n += 1
            p *= lam / n
            cdf += p
        times = sorted(int(b * c.bucket_seconds + rng.random() * c.bucket_seconds) for _ in range(n))
        total = self._cum_activity[-1]
        max_w = self._max_hour_weight
        rank, last = 0, None
        for t in times:
            while True:  # choose an author by activity, thinned by the author's hour profile
                i = min(bisect.bisect_left(self._cum_activity, rng.random() * total), c.users - 1)
                if rng.random() * max_w <= self._hour_weight(i, t):
                    break
            rank = rank + 1 if t == last else 0
            last = t
            item = self._writing_item(i, rng, rank, None, t)
            num = item.num
            if item.kind == "t1" and self.posts_by_community.get(item.community):
                item = self._live_reply(item, self.posts_by_community[item.community][-1])
            self._stream.append(item)
            self._by_id[num] = item
            self._times.append(t)
            self.by_user.setdefault(i, []).append(num)
            if item.kind == "t3":
                self.posts_by_community.setdefault(item.community, []).append(num)
                self.posts_all.append(num)
            else:
                self.comments_by_community.setdefault(item.community, []).append(num)
                self.comments_all.append(num)
                self.threads.setdefault(item.link_num, []).append(num)

    def _live_reply(self, comment: Item, post: int) -> Item:
        """``comment`` answering the live ``post`` of its community, or one time in three one of the post's comments
        (chosen by a hash of the comment's id and the seed, so the stream's own draws stay as they were)."""
        h = ((comment.num ^ (self.config.seed * 0x9E3779B97F4A7C15)) * 0xBF58476D1CE4E5B9 >> 29) & 0xFFFFFFFF
        replies = self.threads.get(post, [])
        parent = replies[(h // 3) % len(replies)] if replies and h % 3 == 0 else post
        return dataclasses.replace(comment, link_num=post, parent_num=parent)

    def item(self, num: int) -> Item | None:
        """The thing of id ``num`` (a live item, a history item or a deleted thread), None when there is none."""
        if num < 0:
            return None
        found = self._by_id.get(num)
        if found is not None:
            return found
        slot = num % self._id_slots
        history_slots = self.config.users * MAX_HISTORY
        if slot >= history_slots:  # a deleted thread: the comment answering it names it
            comment = self.item(self.comment_of_thread(num))
            return self.deleted_thread(comment) if comment is not None and comment.link_num == num else None
        i = slot // MAX_HISTORY
        return next((it for it in self.history(i) if it.num == num), None)

    def visible_at(self, item: Item) -> float:
        """The simulated time from which ``item`` (of the live stream) shows in listings: the end of its stream bucket, since
        the stream is built a bucket at a time (:meth:`advance`), not at ``item.created``."""
        b = self.config.bucket_seconds
        return float((math.floor(item.created / b) + 1) * b)

    def visible(self, nums: list[int], now: float) -> int:
        """How many of the time-ordered ids ``nums`` were created at or before ``now`` (ids grow with time)."""
        return bisect.bisect_left(nums, self.thing_id(math.floor(now) + 1, 0))

    def user_items(self, i: int, kind: str, now: float) -> list[Item]:
        """User ``i``'s items of ``kind`` created by ``now``, newest first (history then live)."""
        live = self.by_user.get(i, [])
        live = [self._by_id[k] for k in live[: self.visible(live, now)]]
        items = [it for it in self.history(i) if it.kind == kind] + [it for it in live if it.kind == kind]
        return items[::-1]

    @staticmethod
    def score_at(item: Item, now: float) -> tuple[int, int]:
        """Score and comment count grow towards their final values over a few simulated hours."""
        age = max(0.0, now - item.created)
        grown = 1 - math.exp(-age / 7200)
        return round(item.final_score * grown) + 1, round(item.final_comments * grown)

    def stream_size(self) -> int:
        return len(self._stream)
