"""The README's Spark SQL (section "WARC archives"): ``page_snapshots`` rows joined to their WARC records'
bytes through ``binaryFile``, every row's record the response its digest came from (issue 20)."""

from __future__ import annotations

import gzip
import io

import pytest
from warcio.archiveiterator import ArchiveIterator

from focuscrawl.fetch.warc import WarcArchive

pytestmark = pytest.mark.integration

README_SQL = """
SELECT s.url, s.period, s.content_digest, s.warc_record_id,
       substring(f.content, s.warc_offset + 1, s.warc_length) AS record_gz
FROM delta.`{table}` s
JOIN binaryFile.`{warc}` f ON element_at(split(f.path, '/'), -1) = s.warc_file
"""


def test_spark_sql_joins_each_snapshot_row_to_its_record(spark, site, make_fetcher, tmp_path):
    from focuscrawl.outlinks.revisit import PageRevisitor, SnapshotWriter, snapshot

    for i in range(4):
        site.routes[f"/p{i}"] = (200, {"Content-Type": "text/html"},
                                 f"<html><p>page {i} text</p><a href='/p{i + 1}'>next</a></html>".encode())
    warc, table = tmp_path / "warc", tmp_path / "page_snapshots"
    archive = WarcArchive(warc, prefix="revisitor", max_bytes=1500)  # several files: the join picks the right one
    writer = SnapshotWriter(str(table))
    revisitor = PageRevisitor(make_fetcher(archive=archive), writer, clock=lambda: 0.0, discover="/p[0-9]")
    revisitor.restore([], seeds=[site.url + "/p0"])
    while revisitor.revisit_next() is not None:
        pass
    archive.close()
    assert writer.flush() == 4 and len(archive.files) > 1

    rows = spark.sql(README_SQL.format(table=table, warc=warc)).collect()
    assert sorted(r.url for r in rows) == [f"{site.url}/p{i}" for i in range(4)]
    for row in rows:
        record = next(iter(ArchiveIterator(io.BytesIO(gzip.decompress(row.record_gz)))))
        assert record.rec_headers.get_header("WARC-Record-ID") == row.warc_record_id
        assert record.rec_headers.get_header("WARC-Target-URI") == row.url
        assert snapshot(row.url, record.content_stream().read(), row.period, 0.0)["content_digest"] == row.content_digest
