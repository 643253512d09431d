from focuscrawl.config import settings
from focuscrawl.core.registry import Registry
import pytest


def test_port_offset_shifts_every_default_port(monkeypatch):
    monkeypatch.setenv("FOCUSCRAWL_PORT_OFFSET", "7")
    for var in ("FOCUSCRAWL_KAFKA_PORT", "FOCUSCRAWL_AIRFLOW_PORT", "FOCUSCRAWL_WORLD_PORT", "FOCUSCRAWL_KAFKA_BOOTSTRAP"):
        monkeypatch.delenv(var, raising=False)
    s = settings()
    assert (s.kafka_port, s.airflow_port, s.world_port) == (19099, 18087, 18097)
    assert s.kafka_bootstrap == "127.0.0.1:19099"


def test_services_bind_to_loopback_by_default(monkeypatch):
    monkeypatch.delenv("FOCUSCRAWL_BIND_HOST", raising=False)
    assert settings().bind_host == "127.0.0.1"


def test_embedded_allow_list_names_only_the_world(monkeypatch):
    monkeypatch.delenv("FOCUSCRAWL_ALLOW_PRIVATE_HOSTS", raising=False)
    s = settings()
    assert s.allow_private_hosts == (f"127.0.0.1:{s.world_port}", f"127.0.0.1:{s.world_eval_port}")


def test_registry_names_and_unknown_name_lists_the_known_ones():
    reg = Registry("method")

    @reg.register("abc")
    class Abc:
        pass

    assert reg.parse("abc, ABC") == ["ABC", "ABC"]
    with pytest.raises(KeyError, match="known methods: ABC"):
        reg.get("nope")
