"""Verdicts land in fue_extractions as StatsEvent records (focuscrawl.fue.pipeline.stats_row, the
`fue_extractions` sink): a partial or mistyped verdict is dead-lettered naming its field."""

from __future__ import annotations

import json

from deltalake import DeltaTable

from focuscrawl.lake.delta_sink import DeltaSink, StreamRecord
from focuscrawl.fue.pipeline import StatsEvent
from focuscrawl.stream.sinks import sink


def test_whole_verdicts_land_and_malformed_ones_are_dead_lettered(tmp_path):
    spec = sink("fue_extractions")
    whole = StatsEvent(run_id="r", method="HCP", user="ann", sim_time=60.0, sim_epoch=1.7e9, extraction_seconds=1.5,
                       items=12, pages=3, probability=0.95, relevant=True, history_text="text")
    partial = json.dumps({"method": "HCP", "user": "bob", "relevant": True}).encode()
    mistyped = json.dumps({**json.loads(whole.to_json()), "user": "cid", "relevant": "yes"}).encode()
    delta = DeltaSink(str(tmp_path / "fue_extractions"), spec.table, "fue-extractions-test",
                      dead_letter_uri=str(tmp_path / "dead_letter"), convert=spec.convert)
    delta.write([StreamRecord(spec.topic, 0, i, value, key) for i, (key, value) in
                 enumerate([(b"ann", whole.to_json()), (b"bob", partial), (b"cid", mistyped)])])

    rows = DeltaTable(str(tmp_path / "fue_extractions")).to_pandas()
    assert rows.user.tolist() == ["ann"]
    sent = {k: v for k, v in json.loads(whole.to_json()).items() if k != "chosen"}  # what chose it: chosen_* columns
    assert rows.iloc[0][list(sent)].to_dict() == sent
    assert rows.iloc[0][["chosen_by_model", "chosen_by_method"]].isna().all()  # nothing named what chose it
    dead = DeltaTable(str(tmp_path / "dead_letter")).to_pandas().sort_values("key")
    assert dead.key.tolist() == [b"bob", b"cid"]
    assert dead.reason.str.startswith("not a FUE verdict: StatsEvent.").all(), dead.reason.tolist()
    assert "StatsEvent.run_id: missing" in dead.reason.iloc[0] and "StatsEvent.relevant" in dead.reason.iloc[1]
