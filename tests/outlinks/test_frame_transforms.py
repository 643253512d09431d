"""The outlinks_features jobs in their own process on pandas write what they write on Spark (real Spark, Delta).

Each job's ``run_in_process`` (``focuscrawl.outlinks.frame_transforms``, for a lake below
``FOCUSCRAWL_SPARK_IN_PROCESS_MIB``) against its ``run`` on Spark, step by step on the same input, on a lake with
main texts, error pages, scored pages and copied texts; then the two writers taking turns on one table, as a
growing lake moves from one to the other.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from focuscrawl.outlinks import frame_transforms, spark_transforms
from focuscrawl.outlinks.synthetic import generate_snapshots
from focuscrawl.outlinks.tables import EMBEDDINGS, FEATURES, NEAR_DUPLICATES, RELATED_PAGES, SNAPSHOTS
from focuscrawl.outlinks.targets import keep_links
from test_spark_jobs import job  # tests/outlinks is on the path (rootdir-less test folders)

# A local Spark of its own, none of the session's engines: it runs beside the integration tests, with the unit tests.
pytestmark = [pytest.mark.standalone, pytest.mark.slow]

HISTORY = 2


def snapshots() -> pd.DataFrame:
    """80 pages over 6 periods; every third page has a main text (its first 20 words), every seventh snapshot is a
    404, pages score 0.1-0.9 by their number, five pages' latest texts are copies of page 0's, and in the last
    period every eleventh page has neither a status nor a text (as a row landed without a body)."""
    snaps = generate_snapshots(n_pages=80, n_periods=6, n_topics=6, n_sites=6, words_per_page=40, seed=5)
    number = snaps["url"].str.rsplit("page", n=1).str[1].astype(int)
    snaps["main_text"] = np.where(number % 3 == 0, snaps["text"].str.split().str[:20].str.join(" "), "")
    snaps["status"] = np.where(np.arange(len(snaps)) % 7 == 3, 404, 200)
    snaps["relevance"] = 0.1 + 0.8 * (number % 9) / 8
    last = snaps["period"] == snaps["period"].max()
    source = snaps.loc[last & (number == 0), "text"].iloc[0]
    snaps.loc[last & number.between(1, 5), "text"] = source
    bodiless = last & (number % 11 == 7)
    snaps["status"] = snaps["status"].astype(object).where(~bodiless, None)
    snaps.loc[bodiless, "text"] = None
    return snaps


@pytest.fixture(scope="module")
def lakes(cfg, tmp_path_factory):
    """Two lakes with the same page_snapshots: one the Spark jobs write, one the in-process ones write."""
    from deltalake import write_deltalake

    snaps = snapshots()
    out = []
    for name in ("on_spark", "in_process"):
        root = tmp_path_factory.mktemp(name)
        local = dataclasses.replace(cfg, lake=str(root / "lake"), var_dir=root)
        write_deltalake(SNAPSHOTS.path(local), pa.Table.from_pandas(snaps, schema=SNAPSHOTS.arrow_schema(),
                                                                     preserve_index=False), partition_by=["period"])
        out.append(local)
    return snaps, *out


def table(spec, cfg, keys) -> pd.DataFrame:
    from focuscrawl import lake

    return lake.to_pandas(spec, cfg).sort_values(keys, ignore_index=True)


def test_each_step_writes_on_pandas_what_it_writes_on_spark(spark, lakes):
    from focuscrawl import lake

    snaps, on_spark, here = lakes
    embed, related, features, near = (job(on_spark, n) for n in ("outlinks_embed", "outlinks_related",
                                                                  "outlinks_features", "near_duplicates"))

    assert embed.run(spark, on_spark, dimensions=16) == embed.run_in_process(here, dimensions=16) == 80
    want, got = table(EMBEDDINGS, on_spark, ["url"]), table(EMBEDDINGS, here, ["url"])
    assert got["url"].tolist() == want["url"].tolist()
    assert got["as_of_period"].tolist() == want["as_of_period"].tolist() == [4] * 80  # before the held-out 5
    # The same LSA fitted on the same texts (Spark's sample comes in another order): equal to float noise.
    np.testing.assert_allclose(np.vstack(got["vector"]), np.vstack(want["vector"]), rtol=0, atol=1e-4)

    # From here on both read the same vectors: the in-process lake gets Spark's (written with delta-rs).
    lake.replace_frame(want, EMBEDDINGS, here)
    assert related.run(spark, on_spark, k=5) == related.run_in_process(here, k=5) == 80 * 5
    want, got = table(RELATED_PAGES, on_spark, ["url", "rank"]), table(RELATED_PAGES, here, ["url", "rank"])
    assert got[["url", "neighbour", "rank"]].equals(want[["url", "neighbour", "rank"]])
    np.testing.assert_allclose(got["similarity"], want["similarity"], rtol=0, atol=1e-6)

    assert features.run(spark, on_spark, history_size=HISTORY) == features.run_in_process(here, history_size=HISTORY)
    want, got = table(FEATURES, on_spark, ["period", "url"]), table(FEATURES, here, ["period", "url"])
    assert len(got) == 80 * 4 and list(got.columns) == list(want.columns)
    assert got[["url", "period"]].equals(want[["url", "period"]])
    for column in got.columns[2:]:
        np.testing.assert_allclose(got[column].to_numpy(float), want[column].to_numpy(float), rtol=0, atol=1e-9,
                                   equal_nan=True, err_msg=column)

    assert near.run(spark, on_spark) == near.run_in_process(here) > 0
    want = table(NEAR_DUPLICATES, on_spark, ["url_a", "url_b"])
    got = table(NEAR_DUPLICATES, here, ["url_a", "url_b"])
    assert got.drop(columns="jaccard").equals(want.drop(columns="jaccard"))
    np.testing.assert_allclose(got["jaccard"], want["jaccard"], rtol=0, atol=1e-12)
    assert (got["as_of_period"] == 5).all() and got["cluster_id"].nunique() == 1


def test_the_relevant_links_and_what_they_count_are_the_same_on_pandas(spark, lakes):
    from focuscrawl import lake

    snaps, on_spark, _ = lakes

    def even_link_numbers(texts):  # shipped to the executors by value
        return [0.9 if t.split()[-1].isdigit() and int(t.split()[-1]) % 2 == 0 else 0.1 for t in texts]

    frame = lake.read(spark, SNAPSHOTS, on_spark)
    relevant = frame_transforms.relevant_links(snaps, even_link_numbers, 0.5)
    assert relevant == spark_transforms.relevant_links(frame, even_link_numbers, 0.5)
    assert 0 < len(relevant) < len({u for c in ("internal_outlinks", "external_outlinks") for p in snaps[c] for u in p})

    related = frame_transforms.related(frame_transforms.embed(snaps, dimensions=16), k=5)  # any neighbours will do
    want = spark_transforms.features(frame, spark.createDataFrame(related), HISTORY,
                                     spark_transforms.only_relevant_links(frame, relevant)).toPandas()
    got = frame_transforms.features(snaps, related, HISTORY, keep_links(snaps, relevant))
    want, got = (f.sort_values(["period", "url"], ignore_index=True) for f in (want, got))
    assert got[["url", "period"]].equals(want[["url", "period"]].astype({"period": np.int32}))
    for column in got.columns[2:]:
        np.testing.assert_allclose(got[column].to_numpy(float), want[column].to_numpy(float), rtol=0, atol=1e-9,
                                   equal_nan=True, err_msg=column)


def test_the_two_writers_take_turns_on_one_table(spark, lakes):
    """A lake that grows past the bound moves its jobs from pandas to Spark (and a smaller project back): each
    writer replaces the other's table, which Spark and delta-rs both read, with the spec's column comments."""
    from deltalake import DeltaTable

    from focuscrawl import lake

    _, _, here = lakes
    features = job(here, "outlinks_features")
    related = lake.to_pandas(RELATED_PAGES, here)
    lake.replace_frame(related, RELATED_PAGES, here)  # the table as the in-process job leaves it
    n = features.run_in_process(here, history_size=HISTORY)
    assert lake.read(spark, FEATURES, here).count() == n
    assert features.run(spark, here, history_size=HISTORY + 1) < n  # one period less has a full history
    assert features.run_in_process(here, history_size=HISTORY) == n == len(lake.to_pandas(FEATURES, here))
    assert lake.read(spark, FEATURES, here).count() == n
    assert "nnl_int_lag3" not in lake.read(spark, FEATURES, here).columns  # the schema is the last writer's
    fields = {f.name: f for f in DeltaTable(FEATURES.path(here)).schema().fields}
    assert fields["url"].metadata.get("comment") == "page URL"
    comments = {r.col_name: r.comment for r in spark.sql(f"DESCRIBE delta.`{FEATURES.path(here)}`").collect()}
    assert comments["period"].startswith("target period")
