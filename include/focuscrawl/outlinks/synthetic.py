"""Synthetic weekly snapshots for fast tests and the report (the revisitor takes real ones from the world).

Built so the seed's findings (002, Section 6) can show: pages belong to topics; a topic fixes the
page's vocabulary (so content embedding finds its related pages) and its rate of new outlinks,
which drifts week to week as a persistent topic-level activity (so the related pages' recent
history carries information that one page's own short, noisy history does not). Many pages never
gain links (targets are mostly zero). Content changes (ads, dates) happen at a rate independent of
link change, which is why the CCR baseline should be weak.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

SNAPSHOT_COLUMNS = ["url", "period", "fetched_at", "status", "content_digest", "text", "internal_outlinks",
                    "external_outlinks"]


def generate_snapshots(n_pages: int = 2000, n_periods: int = 10, n_topics: int = 40, n_sites: int = 50,
                       words_per_page: int = 80, activity_noise: float = 1.0, seed: int = 0,
                       start: datetime = datetime(2026, 1, 5, tzinfo=timezone.utc)) -> pd.DataFrame:
    """One row per (page, period) in the snapshot table's columns (see tables.py)."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, n_topics, n_pages)
    site = rng.integers(0, n_sites, n_pages)
    # Topic link rates: a third of the topics are static; the rest spread over two orders of magnitude.
    topic_rate = np.where(rng.random(n_topics) < 1 / 3, 0.0, np.exp(rng.normal(-0.5, 1.0, n_topics)))
    topic_ext_share = rng.uniform(0.3, 0.7, n_topics)
    page_rate = topic_rate[topic] * np.exp(rng.normal(0, 0.5, n_pages)) * (rng.random(n_pages) > 0.05)
    content_change = rng.uniform(0, 0.6, n_pages)
    # Persistent topic activity (AR(1) in logs): this week's activity tells about next week's.
    log_activity = np.zeros((n_periods, n_topics))
    for t in range(1, n_periods):
        log_activity[t] = 0.8 * log_activity[t - 1] + rng.normal(0, activity_noise, n_topics)
    activity = np.exp(log_activity - 0.5 * activity_noise ** 2)

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
                if rng.random() < content_change[i]:
                    texts[i][rng.integers(len(texts[i]))] = f"n{rng.integers(10 ** 6)}"
                mu = page_rate[i] * activity[t, topic[i]]
                new_int = rng.poisson(mu * (1 - topic_ext_share[topic[i]]))
                new_ext = rng.poisson(mu * topic_ext_share[topic[i]])
                # Old links drop off the page as new ones push them out (listing pages).
                internal[i] = [f"http://site{site[i]}.example/a/{next(counter)}" for _ in range(new_int)] + \
                    internal[i][: max(8, len(internal[i]) - new_int)]
                external[i] = [f"http://site{rng.integers(n_sites)}x.example/x/{next(counter)}"
                               for _ in range(new_ext)] + external[i][: max(3, len(external[i]) - new_ext)]
            text = " ".join(texts[i])
            rows.append((urls[i], t, start + timedelta(weeks=t), 200, hashlib.sha1(text.encode()).hexdigest(), text,
                         list(internal[i]), list(external[i])))
    return pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS).astype({"period": "int32", "status": "int32"})
