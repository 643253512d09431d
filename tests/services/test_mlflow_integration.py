"""The model registry for real: ``mlflow server`` started by :class:`MlflowServer` in its own var folder.

Two versions of an outlink model are logged (with the feature table's Delta version) and listed by
`focuscrawl models`; `models promote` rolls one back; a wrong password is refused (401); the server listens on
127.0.0.1 only; the password reaches no log, run, config file or status; `status` shows it up from MLflow's
`/health`, and down once it is killed. The tests run in file order; the last one kills the server.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import requests

from focuscrawl.cli import main as cli
from focuscrawl.config import settings
from focuscrawl.outlinks.store import ModelStore
from focuscrawl.outlinks.training import mirror, model_store, promote_latest, train_and_register
from focuscrawl.services.manager import ServiceManager
from focuscrawl.services.mlflow import MlflowServer, credentials
from focuscrawl.services.model_registry import CHAMPION, ModelRegistry
from focuscrawl.services.process import group_members

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from train_bench import features as synthetic_features  # noqa: E402  (the training bench's feature rows)

pytestmark = pytest.mark.integration

INT = "outlinks.NNL-ET_LBLA.int"
SEARCH = "/api/2.0/mlflow/registered-models/search"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Our own var folder and ports (offset + 60): no other fixture's services are touched."""
    old = dict(os.environ)
    os.environ["FOCUSCRAWL_VAR"] = str(tmp_path_factory.mktemp("mlflow-var"))
    os.environ["FOCUSCRAWL_PORT_OFFSET"] = str(int(old.get("FOCUSCRAWL_PORT_OFFSET", "0")) + 60)
    for key in ("FOCUSCRAWL_MLFLOW_PASSWORD", "FOCUSCRAWL_LAKE", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        os.environ.pop(key, None)
    svc = MlflowServer(settings())
    try:
        svc.start()
        yield svc
    finally:
        svc.stop()
        os.environ.clear()
        os.environ.update(old)


def test_status_shows_it_up_from_its_health(server):
    status = {s.name: s for s in ServiceManager(server.cfg).status()}["mlflow"]
    assert status.up and status.ours and status.url == server.cfg.mlflow_url
    assert "login required" in status.probe.detail and f"password in {server.password_file}" in status.detail


def test_login_is_required_and_a_wrong_password_is_refused(server):
    user, password = credentials(server.cfg)
    url = server.url + SEARCH
    assert requests.get(url, timeout=10).status_code == 401
    assert requests.get(url, auth=(user, "not-" + password), timeout=10).status_code == 401
    assert requests.get(url, auth=(user, password), timeout=10).status_code == 200


def test_it_listens_on_loopback_only(server):
    port = f"{server.cfg.mlflow_port:04X}"
    listening = {}
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and local.endswith(":" + port):  # 0A: LISTEN
                listening.setdefault(table, set()).add(local.split(":")[0])
    assert listening == {"tcp": {"0100007F"}}  # 127.0.0.1, and nothing on IPv6


def test_two_versions_are_listed_promoted_and_rolled_back(server, capsys):
    cfg, registry = server.cfg, ModelRegistry.from_settings(server.cfg)
    frame = synthetic_features(400, 8, seed=3)
    store = model_store(cfg)
    for data_version in (1, 2):  # the DAG's train step, its score step's promotion, its register step
        train_and_register(frame, data_version, store, 4, ["NNL-ET_LBLA"], scopes=("int",), promote=False,
                           cores=1, n_estimators=5)
        promote_latest(store, ["NNL-ET_LBLA"], scopes=("int",))
        mirror(store, registry, ["NNL-ET_LBLA"], scopes=("int",))
    versions = registry.versions()
    assert [(v.version, v.delta_versions) for v in versions] == [(1, {"outlink_features": 1}),
                                                                 (2, {"outlink_features": 2})]
    assert all(set(v.metrics) == {"spearman", "pk_area"} for v in versions)
    champion = store.champion("NNL-ET_LBLA/int")
    assert [v.version for v in versions if CHAMPION in v.aliases] == [champion.registry_version]
    # the model files went to the lake's storage through the server
    assert len(list((Path(cfg.lake) / "mlflow-artifacts").rglob("model.joblib"))) == 2

    capsys.readouterr()
    assert cli.main(["models"]) == 0
    listing = capsys.readouterr().out
    assert INT in listing and "outlink_features@1" in listing and "outlink_features@2" in listing
    assert "champion" in listing and "pk_area=" in listing

    other = 1 if champion.registry_version == 2 else 2
    assert cli.main(["models", "promote", INT, str(other)]) == 0
    assert [v.version for v in registry.versions() if v.name == INT and CHAMPION in v.aliases] == [other]
    assert ModelStore(store.root).champion("NNL-ET_LBLA/int").registry_version == other
    assert cli.main(["models", "promote", INT, "9"]) == 2
    assert "no stored outlink model is version 9" in capsys.readouterr().err


def test_the_password_reaches_no_log_run_file_or_status(server):
    from focuscrawl.platform.status import services

    password = credentials(server.cfg)[1]
    registry = ModelRegistry.from_settings(server.cfg)
    var = Path(server.cfg.var_dir)
    haystacks = {str(p): p.read_text(errors="replace") for p in (var / "logs").glob("*.log")}
    haystacks["basic_auth.ini"] = (server.home / "basic_auth.ini").read_text()
    haystacks["status"] = json.dumps(services(server.cfg))
    for v in registry.versions():
        run = registry.client.get_run(registry.client.get_model_version(v.name, str(v.version)).run_id)
        haystacks[f"run of {v.name} v{v.version}"] = json.dumps([run.data.params, run.data.tags, v.tags])
    for pid in group_members(server.process.pid()):
        haystacks[f"command line of {pid}"] = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    assert len(haystacks) > 6
    for where, text in haystacks.items():
        assert password not in text, f"the MLflow password leaked into {where}"


def test_status_says_down_once_it_is_killed(server):
    server.process.kill()
    status = {s.name: s for s in ServiceManager(server.cfg).status()}["mlflow"]
    assert not status.up and "nothing listens" in status.probe.detail
    assert status.fix == "`focuscrawl services up --only mlflow`"
