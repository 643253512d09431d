"""spark_jobs/near_duplicates.py on real Spark + Delta: the planted set's pairs, as the reference finds them,
in a table `focuscrawl sql` answers by name."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from focuscrawl.core.dedup import DEFAULT, clusters, near_duplicate_pairs
from focuscrawl.outlinks.tables import NEAR_DUPLICATES, SNAPSHOTS
from test_near_duplicates import planted_set  # tests/outlinks is on the path (rootdir-less test folders)
from test_spark_jobs import job

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lake_cfg(cfg, tmp_path_factory):
    """page_snapshots with the planted set as period 1; period 0 holds other texts (the latest counts), plus
    an error page and a chain of two exact copies (one cluster of three)."""
    from deltalake import write_deltalake

    root = tmp_path_factory.mktemp("near-duplicates")
    local = dataclasses.replace(cfg, lake=str(root / "lake"), var_dir=root, catalog_db="fc_neardup")
    texts, planted = planted_set(n_base=240, per_kind=10, seed=4)
    first = next(o for (o, _), kind in planted.items() if kind == "exact")
    texts["http://copies.example/chain/1"] = texts[first]
    texts["http://copies.example/chain/2"] = texts[first]
    at = datetime(2026, 1, 5, tzinfo=timezone.utc)
    rows = [{"url": u, "period": 1, "fetched_at": at, "status": 200, "text": t} for u, t in texts.items()]
    # An older snapshot of every page is an exact copy of one page: only the latest text counts.
    rows += [{"url": u, "period": 0, "fetched_at": at, "status": 200, "text": texts[first]} for u in texts]
    rows.append({"url": "http://copies.example/gone", "period": 1, "fetched_at": at, "status": 404,
                 "text": texts[first]})
    write_deltalake(SNAPSHOTS.path(local), pa.Table.from_pylist(rows, schema=SNAPSHOTS.arrow_schema()),
                    partition_by=["period"])
    return local, texts, planted


def test_job_writes_the_reference_pairs_and_clusters(spark, lake_cfg):
    cfg, texts, planted = lake_cfg
    from focuscrawl.cli.main import run_sql
    from focuscrawl import lake
    from focuscrawl.lake.spark import register_tables

    n = job(cfg, "near_duplicates").run(spark, cfg)
    got = lake.to_pandas(NEAR_DUPLICATES, cfg).sort_values(["url_a", "url_b"], ignore_index=True)
    want = near_duplicate_pairs(texts)
    assert n == len(got) == len(want)
    assert list(zip(got["url_a"], got["url_b"])) == [(p.url_a, p.url_b) for p in want]
    assert got["jaccard"].round(12).tolist() == [round(p.jaccard, 12) for p in want]
    assert got["estimated_jaccard"].tolist() == [p.estimated_jaccard for p in want]
    assert (got["jaccard"] >= DEFAULT.threshold).all() and (got["as_of_period"] == 1).all()
    # planted exact copies found, no 50% copy (the 90% ones: tests/outlinks/test_near_duplicates.py), the 404 never
    found = set(zip(got["url_a"], got["url_b"]))
    for (original, copy), kind in planted.items():
        if kind != "90":
            assert (tuple(sorted((original, copy))) in found) == (kind == "exact")
    assert "http://copies.example/gone" not in set(got["url_a"]) | set(got["url_b"])
    ids = clusters(zip(got["url_a"], got["url_b"]))
    assert got["cluster_id"].tolist() == [ids[a] for a in got["url_a"]]
    first = next(o for (o, _), kind in planted.items() if kind == "exact")
    chain = {first, *(c for (o, c) in planted if o == first), "http://copies.example/chain/1",
             "http://copies.example/chain/2"}
    in_chain = got[got["url_a"].isin(chain)]
    assert len(in_chain) == 6 and set(in_chain["cluster_id"]) == {min(chain)}  # 4 pages, every pair, one cluster

    # queryable by name, as `focuscrawl sql` registers the lake
    assert f"{cfg.catalog_db}.near_duplicates" in register_tables(spark, cfg)
    row = spark.sql(f"SELECT count(DISTINCT cluster_id) AS c, count(*) AS n FROM {cfg.catalog_db}.near_duplicates").first()
    assert (row.c, row.n) == (got["cluster_id"].nunique(), n)
    out = run_sql(spark, f"SELECT url_a, url_b, jaccard FROM {cfg.catalog_db}.near_duplicates WHERE cluster_id = "
                         f"'{min(chain)}' ORDER BY url_a, url_b", 10)
    assert out.endswith("(6 rows)") and f"| {min(chain)} " in out
