"""A fresh consumer's first batch imports nothing (issue 8: the fault suite's dead letters came late).

pyarrow imports pandas the first time it builds rows from Python objects; where bytecode is not cached
(PYTHONDONTWRITEBYTECODE=1 on the build machines) that compiles pandas from source, 15-30 s on a busy
2-core machine, and a dead-letter consumer's first batch stalled that long with its partitions held.
:class:`~focuscrawl.lake.delta_sink.DeltaSink` pays it when constructed. Checked in a new interpreter, since
this one has long imported pandas.
"""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import CHILD_TIMEOUT

PROBE = r"""
import json, sys, tempfile
from focuscrawl.crawl import dead_letters
from focuscrawl.lake.delta_sink import DEAD_LETTER_TABLE, DeltaSink, StreamRecord
from focuscrawl.parse.rejection import Rejection

lake = tempfile.mkdtemp()
sink = DeltaSink(lake + "/dead_letter", DEAD_LETTER_TABLE, "g", lake + "/dead_letter", convert=dead_letters.decode_row)
letter = Rejection("body is not valid JSON", b"{bad", "http://h/r/all/new.json", "listing").dead_letter("probe")
before = set(sys.modules)
result = sink.write([StreamRecord("t", 0, 0, dead_letters.encode(letter))])
print(json.dumps({"written": result.written, "pandas_at_start": "pandas" in before,
                  "imported_by_write": sorted({m.split(".")[0] for m in set(sys.modules) - before})}))
"""


def test_first_write_of_a_fresh_sink_imports_no_pandas():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=CHILD_TIMEOUT, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["written"] == 1
    assert got["pandas_at_start"] is True
    assert "pandas" not in got["imported_by_write"], got["imported_by_write"]
