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


def generate_snapshots(n_pages: int = 2000, n_periods: int = 10, n_topics: int = 40, n_sites: int = 50,
                       words_per_page: int = 80, activity_noise: float = 1.0, seed: int = 0,
                       start: datetime = datetime(2026, 1, 5, tzinfo=timezone.utc), co_change: float = 0.5,
                       content_link_coupling: float = 1.0, rate_drift: float = 0.1) -> pd.DataFrame:
    """One row per (page, period) in the snapshot table's columns (see tables.py)."""
    rng = np.random.default_rng(seed)
    rates = link_rates(rng, n_pages, n_periods, n_topics, n_sites, activity_noise, co_change,
                       content_link_coupling, rate_drift)
    topic, site, updated = rates.topic, rates.site, rates.updated

    topic_words = [[f"t{k}w{j}" for j in range(40)] for k in range(n_topics)]
    common = [f"c{j}" for j in range(300)]
    urls = [f"http://site{site[i]}.example/" + "/".join([f"s{d}" for d in range(i % 3)] + [f"page{i}"])
            for i in range(n_pages)]
    texts = []
    for i in range(n_pages):
        n_topic = int(words_per_page * 0.6)
        words = list(rng.choice(topic_words[topic[i]], n_topic)) + list(rng.choice(common, words_per_page - n_topic))
        texts.append(words)
    counter = iter(range(10 ** 12))
    internal = [[f"http://site{site[i]}.example/a/{next(counter)}" for _ in range(8)] for i in range(n_pages)]
    external = [[f"http://site{(site[i] + 1 + j) % n_sites}.example/x/{next(counter)}" for j in range(3)]
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
                internal[i] = [f"http://site{site[i]}.example/a/{next(counter)}" for _ in range(new_int)] + \
                    internal[i][: max(8, len(internal[i]) - new_int)]
                external[i] = [f"http://site{rng.integers(n_sites)}x.example/x/{next(counter)}"
                               for _ in range(new_ext)] + external[i][: max(3, len(external[i]) - new_ext)]
            text = " ".join(texts[i])
            rows.append((urls[i], t, start + timedelta(weeks=t), 200, hashlib.sha1(text.encode()).hexdigest(), text,
                         list(internal[i]), list(external[i])))
    frame = pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS).astype({"period": "int32", "status": "int32"})
    # Made, not fetched: the table's other columns (the WARC record of a fetch) are null.
    return frame.assign(**{name: None for name in SNAPSHOTS.column_names if name not in frame})
