"""Status files (``focuscrawl.core.status_file``): several processes on one status path never break each other.

Two consumers left on the default ``--status-file`` shared one ``NAME.tmp``; the slower one's rename
then raised FileNotFoundError and ended the process (the fault suite lost a consumer that way).
"""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

from focuscrawl.core.status_file import read_status, write_status


def _write_many(path: str, writer: int, n: int, errors) -> None:
    try:
        for i in range(n):
            write_status(Path(path), {"writer": writer, "i": i})
    except Exception as exc:  # noqa: BLE001 - reported to the test
        errors.put(repr(exc))


def test_writers_sharing_a_status_path_never_fail_and_readers_see_whole_documents(tmp_path):
    path = tmp_path / "status" / "consumer.json"
    ctx = multiprocessing.get_context("fork")
    errors = ctx.Queue()
    writers = [ctx.Process(target=_write_many, args=(str(path), w, 200, errors)) for w in range(3)]
    for p in writers:
        p.start()
    seen = 0
    while any(p.is_alive() for p in writers):
        if path.exists():
            json.loads(path.read_text())  # never half a document
            seen += 1
        time.sleep(0.002)  # a reader polling, not spinning: the writers need the cores
    for p in writers:
        p.join()
    assert [p.exitcode for p in writers] == [0, 0, 0]
    assert errors.empty(), errors.get()
    assert read_status(path)["i"] == 199
    assert sorted(f.name for f in path.parent.iterdir()) == ["consumer.json"]  # no temporary file left
    assert seen > 0
