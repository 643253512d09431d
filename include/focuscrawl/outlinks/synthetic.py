"""Synthetic weekly snapshots for fast tests, the report and the co-change sweep (the revisitor takes
real ones from the world).

Seed 002 (Sections 5-6) asks which signals predict new outlinks: the page's own history (look back),
its related pages' (look around), its content change. The generator makes each mechanism explicit,
with a parameter, so that a sweep can show when each pays; nothing in it is set to reproduce the
paper's verdicts:

- **Topics.** Pages belong to topics; a topic fixes the page's vocabulary (so the content embedding
  finds its related pages) and a base rate of new outlinks (a third of the topics static, the rest
  log-normal over about two orders of magnitude), each page's base rate log-normal around it and 5%
  of the pages never gaining links.
- **Related pages that change together** (``co_change`` c in [0, 1]): each week a page's activity is
  ``exp(c·A_topic(t) + sqrt(1 - c²)·B_page(t))``, A and B independent AR(1) processes in logs
  (coefficient 0.8, innovation sd ``activity_noise``). At c = 0 a page's fluctuations are its own and
  its related pages tell nothing its own history does not; at c = 1 a topic's pages move together,
  so their recent weeks say where the page is going.
- **Content change that drives link change** (``content_link_coupling`` κ): each week a page updates its
  text with its own probability u_p (uniform 0-0.6); an update multiplies that week's expected new
  links by (1 + κ), renormalised by (1 + κ u_p) so the page's mean rate does not depend on κ. At κ = 0
  content change says nothing about links (the CCR baseline is then uninformative by construction).
- **Rates that drift** (``rate_drift``): each page's base rate follows a random walk in logs with that
  sd per week, so old history goes stale.

Defaults (stated neutral choices, not fitted to data and not to the paper's results): ``co_change =
0.5``, the middle of the swept range; ``content_link_coupling = 1.0``, an update doubling the
week's expected new links; ``rate_drift = 0.1``, a slow drift (a base rate moves by about 30% in ten
weeks); ``activity_noise = 1.0``. ``focuscrawl experiment outlinks-cochange`` sweeps ``co_change``.

**Hidden topic labels of the outlinks** (:func:`labelled_snapshots`, for ``[loops.revisits] target =
"new_relevant_outlinks"``; :func:`generate_snapshots` draws none and makes the same worlds as before).
A page focus is about one topic of the world (drawn). Each topic k has a share s_k of its pages' outlinks
that point to pages about the focus, s_k ~ Beta with mean ``share_mean`` and concentration
``share_concentration`` (a + b); each outlink of a topic-k page is relevant with probability s_k,
independently of the topic's link rate and of everything else (correlation 0); an irrelevant outlink
points to one of the other topics, uniformly. With probability ``url_topic_word`` the link's URL carries
one word of its target's topic in its path (a slug, ``/a/t7w12/123``), otherwise none: the URL tells the
label only noisily, as a real one does. The labels are returned beside the snapshots (``truth``), never
in a snapshot column, and are drawn from a second generator (``default_rng([seed, 1])``), so the snapshot
draws (link counts, texts, activity) are those of :func:`generate_snapshots` with the same arguments.

Defaults (stated neutral choices, not fitted to data and not to a result): ``share_mean = 0.5`` and
``share_concentration = 2``, i.e. s_k ~ Beta(1, 1), the uniform: the maximum-entropy prior on a share in
[0, 1], which says nothing about how much of a topic's linking is about the focus (we have no data on
it; a wider spread favours counting only relevant links, none makes it pointless, and we pick neither
end); ``url_topic_word = 0.5``, the middle of [0, 1]: half the URLs carry a topic slug.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from focuscrawl.outlinks.tables import SNAPSHOTS

SNAPSHOT_COLUMNS = ["url", "period", "fetched_at", "status", "content_digest", "text", "internal_outlinks",
                    "external_outlinks"]
TRUTH_COLUMNS = ["link", "relevant", "topic"]
LABEL_STREAM = 1  # the labels' generator is default_rng([seed, LABEL_STREAM]): apart from the snapshots'
WORDS_PER_TOPIC = 40


def _ar1(n_periods: int, n: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros((n_periods, n))
    for t in range(1, n_periods):
        out[t] = 0.8 * out[t - 1] + rng.normal(0, noise, n)
    return out


@dataclass(frozen=True)
class LinkRates:
    """The generator's mechanism without the pages' text and links: who is in which topic and site,
    and each week's expected new outlinks ``mu`` (periods x pages; row 0, the first snapshot, unused)."""

    topic: np.ndarray
    site: np.ndarray
    ext_share: np.ndarray  # per page: its topic's share of external new outlinks
    updated: np.ndarray    # periods x pages: the text changed that week
    mu: np.ndarray


def link_rates(rng: np.random.Generator, n_pages: int, n_periods: int, n_topics: int, n_sites: int,
               activity_noise: float = 1.0, co_change: float = 0.5, content_link_coupling: float = 1.0,
               rate_drift: float = 0.1) -> LinkRates:
    """The weekly rates of :func:`generate_snapshots` (see the module's docstring), drawn from ``rng``."""
    if not 0.0 <= co_change <= 1.0:
        raise ValueError(f"co_change must be in [0, 1] (got {co_change})")
    if content_link_coupling < 0 or rate_drift < 0:
        raise ValueError("content_link_coupling and rate_drift must be >= 0")
    topic = rng.integers(0, n_topics, n_pages)
    site = rng.integers(0, n_sites, n_pages)
    # Topic link rates: a third of the topics are static; the rest spread over two orders of magnitude.
    topic_rate = np.where(rng.random(n_topics) < 1 / 3, 0.0, np.exp(rng.normal(-0.5, 1.0, n_topics)))
    topic_ext_share = rng.uniform(0.3, 0.7, n_topics)
    page_rate = topic_rate[topic] * np.exp(rng.normal(0, 0.5, n_pages)) * (rng.random(n_pages) > 0.05)
    content_change = rng.uniform(0, 0.6, n_pages)
    # Weekly activity: the topic's shared part and the page's own, mixed by co_change (variance kept).
    mixed = co_change * _ar1(n_periods, n_topics, activity_noise, rng)[:, topic] \
        + np.sqrt(1 - co_change**2) * _ar1(n_periods, n_pages, activity_noise, rng)
    activity = np.exp(mixed - 0.5 * activity_noise**2)
    drift = np.exp(np.cumsum(rng.normal(0, rate_drift, (n_periods, n_pages)), axis=0))
    updated = rng.random((n_periods, n_pages)) < content_change[None, :]
    boost = (1 + content_link_coupling * updated) / (1 + content_link_coupling * content_change[None, :])
    return LinkRates(topic, site, topic_ext_share[topic], updated, page_rate[None, :] * drift * activity * boost)


@dataclass(frozen=True)
class LinkLabels:
    """How the hidden topic labels of the outlinks are drawn (see the module's docstring)."""

    share_mean: float = 0.5
    share_concentration: float = 2.0
    url_topic_word: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.share_mean < 1 or self.share_concentration <= 0 or not 0 <= self.url_topic_word <= 1:
            raise ValueError(f"need 0 < share_mean < 1, share_concentration > 0, 0 <= url_topic_word <= 1 (got {self})")


@dataclass(frozen=True)
class LabelledSnapshots:
    """A world whose outlinks carry hidden labels: ``snapshots`` has the snapshot table's columns only (what
    the live path reads); ``truth`` (one row per outlink: link, relevant, the linked page's topic), ``focus``
    and ``share`` (per topic) are for the evaluation side only; ``topic``: each page's topic."""

    snapshots: pd.DataFrame
    truth: pd.DataFrame
    focus: int
    share: np.ndarray
    topic: np.ndarray
    n_topics: int
    words_per_page: int


class _Linker:
    """Makes each outlink's URL ``base + number``; with labels, draws the link's hidden label and maybe a
    slug of its target's topic from its own generator (four draws per link, whatever they give)."""

    def __init__(self, labels: LinkLabels | None, seed: int, topic: np.ndarray, n_topics: int) -> None:
        self.labels, self.topic, self.n_topics = labels, topic, n_topics
        self.rows: list[tuple[str, bool, int]] = []
        if labels is None:
            return
        self.rng = np.random.default_rng([seed, LABEL_STREAM])
        self.focus = int(self.rng.integers(n_topics))
        a = labels.share_mean * labels.share_concentration
        self.share = self.rng.beta(a, labels.share_concentration - a, n_topics)

    def __call__(self, base: str, number: int, page: int) -> str:
        if self.labels is None:
            return f"{base}{number}"
        relevant = bool(self.rng.random() < self.share[self.topic[page]])
        other = int(self.rng.integers(max(1, self.n_topics - 1)))
        target = self.focus if relevant or self.n_topics == 1 else other + (other >= self.focus)
        slug = self.rng.random() < self.labels.url_topic_word
        word = int(self.rng.integers(WORDS_PER_TOPIC))
        url = f"{base}{topic_word(target, word)}/{number}" if slug else f"{base}{number}"
        self.rows.append((url, relevant, target))
        return url


def topic_word(topic: int, j: int) -> str:
    """The j-th word of a topic's vocabulary."""
    return f"t{topic}w{j}"


def _page_words(rng: np.random.Generator, topic: int, common: list[str], words_per_page: int) -> list[str]:
    """A page's words: 60% drawn from its topic's vocabulary, the rest from the common words."""
    n_topic = int(words_per_page * 0.6)
    vocabulary = [topic_word(topic, j) for j in range(WORDS_PER_TOPIC)]
    return list(rng.choice(vocabulary, n_topic)) + list(rng.choice(common, words_per_page - n_topic))


COMMON_WORDS = [f"c{j}" for j in range(300)]


def generate_snapshots(n_pages: int = 2000, n_periods: int = 10, n_topics: int = 40, n_sites: int = 50,
                       words_per_page: int = 80, activity_noise: float = 1.0, seed: int = 0,
                       start: datetime = datetime(2026, 1, 5, tzinfo=timezone.utc), co_change: float = 0.5,
                       content_link_coupling: float = 1.0, rate_drift: float = 0.1) -> pd.DataFrame:
    """One row per (page, period) in the snapshot table's columns (see tables.py)."""
    return _generate(n_pages, n_periods, n_topics, n_sites, words_per_page, activity_noise, seed, start, co_change,
                     content_link_coupling, rate_drift, None).snapshots


def labelled_snapshots(labels: LinkLabels = LinkLabels(), n_pages: int = 2000, n_periods: int = 10, n_topics: int = 40,
                       n_sites: int = 50, words_per_page: int = 80, activity_noise: float = 1.0, seed: int = 0,
                       start: datetime = datetime(2026, 1, 5, tzinfo=timezone.utc), co_change: float = 0.5,
                       content_link_coupling: float = 1.0, rate_drift: float = 0.1) -> LabelledSnapshots:
    """:func:`generate_snapshots`' world (same draws) with every outlink labelled relevant or not to a page
    focus, and its URL carrying that label only noisily (see the module's docstring)."""
    return _generate(n_pages, n_periods, n_topics, n_sites, words_per_page, activity_noise, seed, start, co_change,
                     content_link_coupling, rate_drift, labels)


def example_pages(world: LabelledSnapshots, positives: int, negatives: int, seed: int) -> tuple[list[str], list[int]]:
    """Texts and labels of example pages for the world's page focus, drawn as the world draws a page's text
    (positives of the focus topic, negatives of the other topics, uniformly), none of them a page of the world."""
    rng = np.random.default_rng([seed, LABEL_STREAM, 1])
    others = [k for k in range(world.n_topics) if k != world.focus]
    topics = [world.focus] * positives + [int(k) for k in rng.choice(others, negatives)]
    texts = [" ".join(_page_words(rng, k, COMMON_WORDS, world.words_per_page)) for k in topics]
    return texts, [1] * positives + [0] * negatives


def _generate(n_pages, n_periods, n_topics, n_sites, words_per_page, activity_noise, seed, start, co_change,
              content_link_coupling, rate_drift, labels: LinkLabels | None) -> LabelledSnapshots:
    rng = np.random.default_rng(seed)
    rates = link_rates(rng, n_pages, n_periods, n_topics, n_sites, activity_noise, co_change,
                       content_link_coupling, rate_drift)
    topic, site, updated = rates.topic, rates.site, rates.updated
    link = _Linker(labels, seed, topic, n_topics)

    urls = [f"http://site{site[i]}.example/" + "/".join([f"s{d}" for d in range(i % 3)] + [f"page{i}"])
            for i in range(n_pages)]
    texts = [_page_words(rng, topic[i], COMMON_WORDS, words_per_page) for i in range(n_pages)]
    counter = iter(range(10 ** 12))
    internal = [[link(f"http://site{site[i]}.example/a/", next(counter), i) for _ in range(8)] for i in range(n_pages)]
    external = [[link(f"http://site{(site[i] + 1 + j) % n_sites}.example/x/", next(counter), i) for j in range(3)]
                for i in range(n_pages)]

    rows = []
    for t in range(n_periods):
        for i in range(n_pages):
            if t > 0:
                if updated[t, i]:
                    texts[i][rng.integers(len(texts[i]))] = f"n{rng.integers(10 ** 6)}"
                mu = rates.mu[t, i]
                new_int = rng.poisson(mu * (1 - rates.ext_share[i]))
                new_ext = rng.poisson(mu * rates.ext_share[i])
                # Old links drop off the page as new ones push them out (listing pages).
                internal[i] = [link(f"http://site{site[i]}.example/a/", next(counter), i) for _ in range(new_int)] + \
                    internal[i][: max(8, len(internal[i]) - new_int)]
                external[i] = [link(f"http://site{rng.integers(n_sites)}x.example/x/", next(counter), i)
                               for _ in range(new_ext)] + external[i][: max(3, len(external[i]) - new_ext)]
            text = " ".join(texts[i])
            rows.append((urls[i], t, start + timedelta(weeks=t), 200, hashlib.sha1(text.encode()).hexdigest(), text,
                         list(internal[i]), list(external[i])))
    frame = pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS).astype({"period": "int32", "status": "int32"})
    # Made, not fetched: the table's other columns (the WARC record of a fetch) are null.
    frame = frame.assign(**{name: None for name in SNAPSHOTS.column_names if name not in frame})
    truth = pd.DataFrame(link.rows, columns=TRUTH_COLUMNS).astype({"relevant": bool, "topic": "int32"})
    return LabelledSnapshots(frame, truth, getattr(link, "focus", -1), getattr(link, "share", np.zeros(0)), topic,
                             n_topics, words_per_page)
