"""The source estimates' held-out figures (focuscrawl.ephemeral.evaluation): fitted before a split time, judged on
what came after it, against the pooled fit, with an interval over the sources."""

from __future__ import annotations

import numpy as np
import pandas as pd

from focuscrawl.ephemeral.evaluation import held_out_figures
from focuscrawl.ephemeral.feedback import epoch_micros, profit_signal

T0 = 1_700_000_000.0
CLICKS = profit_signal("CLICKS")


def recrawls(rates: dict[str, float], n: int = 120, every_s: float = 300.0, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"source_url": source, "recrawled_at": pd.Timestamp(T0 + i * every_s, unit="s", tz="UTC"),
                          "elapsed_s": every_s, "new_links": int(rng.poisson(rate * every_s))}
                         for source, rate in rates.items() for i in range(1, n + 1)])


def clicks(profits: dict[str, float], pages: int = 60, seed: int = 0, observed_after_s: float = 7200.0) -> pd.DataFrame:
    """Each source's pages, one every 10 minutes, their clicks counted from creation to ``observed_after_s``
    later (decay: a 1-hour half-life), ``profits[source]`` clicks a page in all."""
    rng = np.random.default_rng(seed)
    mu = np.log(2) / 3600.0
    rows = []
    for source, profit in profits.items():
        for i in range(pages):
            created = pd.Timestamp(T0 + i * 600.0, unit="s", tz="UTC")
            rows.append({"source_url": source, "page_url": f"{source}p{i}", "created_at": created, "counted_from": created,
                         "observed_at": created + pd.Timedelta(seconds=observed_after_s),
                         "clicks": int(rng.poisson(profit * -np.expm1(-mu * observed_after_s)))})
    return pd.DataFrame(rows)


SOURCES = [f"https://s{i}.test/" for i in range(12)]


def test_sources_that_differ_are_predicted_better_than_pooled_and_alike_ones_are_not():
    differ = held_out_figures(recrawls({s: 10 ** (-4 + 2 * i / 11) for i, s in enumerate(SOURCES)}),
                              clicks({s: 2.0 + 8 * i for i, s in enumerate(SOURCES)}), CLICKS)
    assert differ["lam_skill_low"] > 0 and differ["profit_skill_low"] > 0, differ
    assert differ["lam_mae"] < differ["lam_mae_pooled"] and differ["held_out_recrawls"] == 0.2 * 120 * 12
    alike = held_out_figures(recrawls({s: 1e-3 for s in SOURCES}), clicks({s: 20.0 for s in SOURCES}), CLICKS)
    # one rate and one profit for all: the per-source estimates add nothing the interval can tell from noise
    assert alike["lam_skill_low"] < 0 < alike["lam_skill_high"], alike
    assert alike["profit_skill_low"] < 0 < alike["profit_skill_high"], alike


def test_nothing_known_only_after_the_split_reaches_the_fit():
    rates, profits = {s: 1e-3 * (i + 1) for i, s in enumerate(SOURCES)}, {s: 5.0 * (i + 1) for i, s in enumerate(SOURCES)}
    rows = clicks(profits)
    figures = held_out_figures(recrawls(rates), rows, CLICKS)
    # a later count of the older pages (read after the split time) is what a fit at that time could not see
    at = np.quantile(epoch_micros(recrawls(rates)["recrawled_at"]), 0.8)
    old = rows[epoch_micros(rows["created_at"]) < at]
    later = old.assign(observed_at=old["observed_at"] + pd.Timedelta(days=2), clicks=old["clicks"] * 50)
    assert held_out_figures(recrawls(rates), pd.concat([rows, later]), CLICKS) == figures
    known, new = CLICKS.forward_split(pd.concat([rows, later]), at)
    assert len(known) + len(new) < len(rows) + len(later) and (epoch_micros(new["created_at"]) >= at).all()


def test_the_relevance_signal_splits_pages_by_their_fetch():
    signal = profit_signal("RELEVANCE", 3600.0)
    rows = clicks({s: 1.0 for s in SOURCES[:2]}).assign(fetched_at=lambda f: f["created_at"], published_at=None,
                                                         relevance=0.5)
    at = float(np.median(epoch_micros(rows["fetched_at"])))
    known, new = signal.forward_split(rows, at)
    assert len(known) + len(new) == len(rows) and known["fetched_at"].max() < new["fetched_at"].min()


def test_a_young_crawl_has_no_figures():
    assert held_out_figures(recrawls({"https://a.test/": 1e-3}, n=1), clicks({}), CLICKS) == {}
    empty = clicks({"https://a.test/": 1.0}).iloc[:0]
    assert held_out_figures(recrawls({"https://a.test/": 1e-3}, n=0).reindex(
        columns=["source_url", "recrawled_at", "elapsed_s", "new_links"]), empty, CLICKS) == {}
