"""The focuscrawl view's steering forms on a real broker: what a pause sets and records (``tests/ui/test_live_view.py``
has the refusals and the forms against the control module's seam)."""

from __future__ import annotations

import pytest

from focuscrawl import control
from focuscrawl.config import settings
from live_view_data import as_user, steering_client


@pytest.mark.integration
def test_an_admins_pause_lands_on_the_control_topic_and_its_audit_names_the_user(tmp_path, monkeypatch, kafka_broker):
    """The whole path on the session's broker: the view's pause is the control topic's state (as a starting
    process reads it, and as the page shows it) and the audit topic's record (what the control_audit sink lands)
    names the Airflow user. The loop is resumed after, for the session's other tests."""
    import json
    import uuid

    from kafka import KafkaConsumer, TopicPartition

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))  # its own active project; the session's broker
    cfg = settings()
    user = f"ada-{uuid.uuid4().hex[:8]}"
    client = steering_client(cfg, tmp_path, user)
    try:
        response = client.post("/control/pause", data={"loop": "revisits"}, headers=as_user(user))
        assert response.status_code == 200 and "sent: pause revisits" in response.text  # the redirect, followed
        assert control.commanded(cfg.kafka_bootstrap)["revisits"]["paused"] is True
        assert "commanded: <b>paused</b>" in response.text.split("id='loop-revisits'")[1]
        consumer = KafkaConsumer(bootstrap_servers=cfg.kafka_bootstrap, group_id=None, enable_auto_commit=False,
                                 consumer_timeout_ms=5000)
        tps = [TopicPartition(control.AUDIT_TOPIC, p) for p in consumer.partitions_for_topic(control.AUDIT_TOPIC)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        rows = [json.loads(r.value) for r in consumer]
        consumer.close()
        assert [(r["action"], r["loop"], r["control_key"]) for r in rows if r["by"] == user] == [
            ("pause", "revisits", "paused/revisits")]
    finally:
        assert client.post("/control/resume", data={"loop": "revisits"}, headers=as_user(user)).status_code == 200
    assert control.commanded(cfg.kafka_bootstrap)["revisits"]["paused"] is False
