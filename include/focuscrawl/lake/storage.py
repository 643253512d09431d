"""Delta on object storage: the client settings both engines need when the lake is ``s3://``.

docs/scale-out.md (Delta on object storage). The same tables live
under ``FOCUSCRAWL_LAKE=s3://bucket/prefix`` on AWS S3 or any S3-compatible endpoint
(``FOCUSCRAWL_S3_ENDPOINT``): the consumers write them with delta-rs, Spark reads and writes them
through Hadoop's s3a connector. Credentials are never settings: both clients read
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` (and ``AWS_REGION``) from the environment, or an
instance role, so no key is in code, Spark conf or logs.

Concurrent writers. A Delta commit is safe only if creating ``_delta_log/<version>.json`` fails
when another writer created it first. S3 has offered that since 2024 (``PUT`` with
``If-None-Match: *``):

- delta-rs (``deltalake`` 1.x) commits with that conditional put (``conditional_put=etag``, set
  explicitly here), so any number of consumer processes may append to one table: the loser of a
  race gets "version exists", checks for conflicts and retries at the next version. delta-rs 1.x
  dropped the DynamoDB lock (``S3DynamoDBLogStore``) altogether.
- delta-spark 4.4 has no conditional-put LogStore yet (delta-io/delta#4813); on ``s3``/``s3a``
  it uses ``S3SingleDriverLogStore``, which serialises commits inside one driver JVM only. Its
  DynamoDB alternative cannot coordinate with delta-rs 1.x. So the rule on object storage is one
  writing engine per table: consumer tables (bronze) are written by delta-rs only, and each
  Spark-written table by one job run at a time (the DAGs' ``max_active_runs=1``). Spark may read
  any table at any time: readers need no coordination.

The endpoint must also honour ``If-None-Match`` on ``PutObject`` (AWS S3, MinIO, moto, R2 do); one
that silently ignores it would let two consumers overwrite each other's commit.
"""

from __future__ import annotations

from urllib.parse import urlparse

from focuscrawl.config import Settings

OBJECT_STORE_SCHEMES = ("s3", "s3a")


def is_object_store(uri: str) -> bool:
    return urlparse(uri).scheme in OBJECT_STORE_SCHEMES


def storage_options(cfg: Settings) -> dict[str, str]:
    """``storage_options`` for deltalake (``DeltaTable``, ``write_deltalake``); empty for a local lake."""
    if not is_object_store(cfg.lake):
        return {}
    options = {"conditional_put": "etag"}
    if cfg.s3_endpoint:
        options["endpoint_url"] = cfg.s3_endpoint
        # object_store addresses buckets path-style unless told otherwise, as S3-compatible servers expect.
        options["allow_http"] = str(urlparse(cfg.s3_endpoint).scheme == "http").lower()
    return options


def s3a_conf(cfg: Settings) -> dict[str, str]:
    """Spark settings for an object-store lake (s3a connector); empty for a local lake."""
    if not is_object_store(cfg.lake):
        return {}
    conf = {
        # delta-rs and the settings name the lake s3://; Spark reads that scheme through s3a too.
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
    }
    if cfg.s3_endpoint:
        conf.update({
            "spark.hadoop.fs.s3a.endpoint": cfg.s3_endpoint,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(urlparse(cfg.s3_endpoint).scheme == "https").lower(),
        })
    return conf
