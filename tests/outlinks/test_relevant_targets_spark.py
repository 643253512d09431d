"""new_relevant_outlinks on Spark: the links judged (a fetched page's latest score, else its URL's words),
the snapshots cut to them, and the features counting only them equal the pandas reference (real Spark, Delta)."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from focuscrawl.outlinks import spark_transforms
from focuscrawl.outlinks.features import build_features
from focuscrawl.outlinks.synthetic import generate_snapshots
from focuscrawl.outlinks.tables import RELATED_PAGES, SNAPSHOTS
from focuscrawl.outlinks.targets import keep_links, targets

pytestmark = pytest.mark.integration


def _snapshots() -> pd.DataFrame:
    """Synthetic weekly snapshots whose first internal link of each even page points to another page, so
    some links are pages the revisitor fetched and scored: page i scores 0.8 when i % 3 == 0, else 0.2,
    except in its last period, where every page scores 0.3 but page 3's 0.95 (the latest score counts)."""
    snaps = generate_snapshots(n_pages=40, n_periods=5, n_topics=4, n_sites=4, words_per_page=30, seed=2)
    urls = sorted(snaps.url.unique(), key=lambda u: int(u.rsplit("page", 1)[1]))
    index = {u: int(u.rsplit("page", 1)[1]) for u in urls}
    snaps["internal_outlinks"] = [([urls[(index[u] + 3) % len(urls)]] + list(links[1:])) if index[u] % 2 == 0 else list(links)
                                  for u, links in zip(snaps.url, snaps.internal_outlinks)]
    last = snaps.period == snaps.period.max()
    snaps["relevance"] = np.where(last, 0.3, [0.8 if index[u] % 3 == 0 else 0.2 for u in snaps.url])
    snaps.loc[last & (snaps.url == urls[3]), "relevance"] = 0.95
    return snaps


def test_relevant_links_and_the_features_that_count_only_them(spark, cfg, tmp_path):
    from deltalake import write_deltalake

    from focuscrawl import lake

    def even_link_numbers(texts):  # defined here: Spark ships it to the executors by value
        """The words of a link's URL end in its number: even numbers are about the focus, odd ones not."""
        return [0.9 if t.split()[-1].isdigit() and int(t.split()[-1]) % 2 == 0 else 0.1 for t in texts]

    local = dataclasses.replace(cfg, lake=str(tmp_path / "lake"), var_dir=tmp_path)
    snaps = _snapshots()
    write_deltalake(SNAPSHOTS.path(local), pa.Table.from_pandas(snaps, schema=SNAPSHOTS.arrow_schema(),
                                                                preserve_index=False), partition_by=["period"])
    frame = lake.read(spark, SNAPSHOTS, local)

    relevant = spark_transforms.relevant_links(frame, even_link_numbers, 0.5)
    pages = set(snaps.url)
    latest = snaps.sort_values("period").groupby("url").relevance.last()
    every_link = {u for col in ("internal_outlinks", "external_outlinks") for links in snaps[col] for u in links}
    want = {u for u in every_link if (latest[u] >= 0.5 if u in pages else int(u.rsplit("/", 1)[1]) % 2 == 0)}
    assert relevant == want
    linked_pages = every_link & pages
    assert linked_pages and {u for u in linked_pages if u in relevant} == {u for u in linked_pages if latest[u] >= 0.5}
    assert 0 < len(relevant) < len(every_link)

    cut = spark_transforms.only_relevant_links(frame, relevant).toPandas().sort_values(["url", "period"], ignore_index=True)
    ref = keep_links(snaps, relevant).sort_values(["url", "period"], ignore_index=True)
    assert [list(x) for x in cut.internal_outlinks] == [list(x) for x in ref.internal_outlinks]
    assert [list(x) for x in cut.external_outlinks] == [list(x) for x in ref.external_outlinks]

    # related pages from the embed and related jobs, then the features counting relevant outlinks only
    def job(name):
        spec = importlib.util.spec_from_file_location(name, cfg.home / "spark_jobs" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    job("outlinks_embed").run(spark, local, dimensions=8)
    job("outlinks_related").run(spark, local, k=4)
    related = lake.to_pandas(RELATED_PAGES, local)
    got = spark_transforms.features(frame, lake.read(spark, RELATED_PAGES, local), 2,
                                    spark_transforms.only_relevant_links(frame, relevant)).toPandas()
    got = got.sort_values(["period", "url"], ignore_index=True)
    want_rows = build_features(snaps, targets(keep_links(snaps, relevant)), related, history_size=2)
    every_rows = build_features(snaps, targets(snaps), related, history_size=2)
    for col in ["nnl_int", "nnl_ext", "nnl_int_lag1", "lcr_int", "around_max_nnl_int_av", "n_links_int"]:
        assert np.allclose(got[col].to_numpy(float), want_rows[col].to_numpy(float), equal_nan=True), col
    # fewer new outlinks counted than with every link, the page statics unchanged
    assert np.nansum(want_rows.nnl_int) < np.nansum(every_rows.nnl_int)
    assert np.allclose(want_rows.n_links_int.to_numpy(float), every_rows.n_links_int.to_numpy(float))
