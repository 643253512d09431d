"""The model registry for real: ``mlflow server`` started by :class:`MlflowServer` in its own var folder.

Two versions of an outlink model are logged (with the feature table's Delta version) and listed by
`focuscrawl models`; `models promote` rolls one back; two versions of a model of every other family (page relevance,
FUE pseudo-trained refresh, source estimates) are recorded by the model_registry DAG's tasks, with their held-out
metrics or Delta versions, and a rollback of each moves its store's champion; a wrong password is refused (401); the server listens on
127.0.0.1 only; the password reaches no log, run, config file or status; `status` shows it up from MLflow's
`/health`, and down once it is killed. The tests run in file order; the last one kills the server.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from focuscrawl.cli import main as cli
from focuscrawl.config import settings
from focuscrawl.outlinks.store import ModelStore
from focuscrawl.orchestration.model_families import family, mirror
from focuscrawl.orchestration.registry_task import record_family
from focuscrawl.outlinks.training import model_store, promote_latest, train_and_register
from focuscrawl.services.manager import ServiceManager
from focuscrawl.services.mlflow import MlflowServer, credentials
from focuscrawl.services.model_registry import CHAMPION, ModelRegistry
from focuscrawl.services.process import group_members, wait_until
from helpers import mlflow_login_is_required

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from train_bench import features as synthetic_features  # noqa: E402  (the training bench's feature rows)

pytestmark = pytest.mark.integration

INT = "outlinks.NNL-ET_LBLA.int"


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
    mlflow_login_is_required(server)


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
        mirror(family(cfg, "outlinks"), registry)
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
    assert "no stored outlinks model is version 9" in capsys.readouterr().err


def test_every_family_has_two_versions_with_its_lineage_and_rolls_back(server, tmp_path, capsys):
    """The page relevance model, a pseudo-trained FUE refresh and the source estimates, each fitted twice by its
    loop's own code, recorded by the DAG's tasks (record_<family>), listed, and rolled back with the CLI."""
    import pandas as pd
    from deltalake import DeltaTable

    from focuscrawl.core.status_file import write_status
    from focuscrawl.ephemeral.fitted import model_store as sources_store, plan_estimates
    from focuscrawl.fue.batch import model_store as fue_store, refresh
    from focuscrawl.relevance.train import store_for, train_page_model
    from focuscrawl.fue.examples import example_set
    from tests.fue_stream.test_fue_model_registry import TRAIN
    from tests.fue_stream.test_fue_batch import _posts, _stats, example_users_project
    from tests.relevance.test_live_relevance import local_page_focus

    cfg, registry = server.cfg, ModelRegistry.from_settings(server.cfg)
    project = local_page_focus(tmp_path)
    write_status(Path(cfg.var_dir) / "run" / "project.json", {"name": project.name})  # what `up` makes active
    stats, posts = _stats(tmp_path), _posts(tmp_path)
    (tmp_path / "fue").mkdir()
    examples = example_set(example_users_project(tmp_path / "fue", *TRAIN), cfg)
    for run in (1, 2):
        train_page_model(project, cfg, log=lambda _: None)
        refresh(cfg, "HCP-POS", 10, posts, examples, stats)
        plan_estimates(sources_store(cfg), lambda: pd.DataFrame({"source_url": ["https://a.example/"], "lam": [0.1 * run]}),
                       {"feedback": "RELEVANCE"}, {"source_recrawls": run, "source_pages": 10 + run})
    said: list[str] = []
    for name in ("pages", "fue", "sources"):
        assert record_family(cfg, name, said.append), said
    assert record_family(cfg, "sources", said.append) == ["sources.estimates: logged store version(s) none new; champion v2"]
    listed = {}
    for v in registry.versions():
        listed.setdefault(v.name, []).append(v)
    pages, pseudo, estimates = f"pages.{project.name}.TFIDF-LR", "fue.pseudo.HCP-POS", "sources.estimates"
    assert [v.version for v in listed[pages]] == [1, 2] and all("auc" in v.metrics for v in listed[pages])
    assert [v.delta_versions for v in listed[pseudo]] == [{"fue_extractions": DeltaTable(stats).version(),
                                                           "reddit_posts": DeltaTable(posts).version()}] * 2
    assert [v.delta_versions for v in listed[estimates]] == [{"source_recrawls": 1, "source_pages": 11},
                                                             {"source_recrawls": 2, "source_pages": 12}]
    stores = {pages: (store_for(project, cfg), "TFIDF-LR"), pseudo: (fue_store(cfg), "pseudo/HCP-POS"),
              estimates: (sources_store(cfg), "estimates")}
    for name, (store, key) in stores.items():
        assert [v.version for v in listed[name] if CHAMPION in v.aliases] == [store.champion(key).registry_version]
        capsys.readouterr()
        assert cli.main(["models", "promote", name, "1"]) == 0, capsys.readouterr().err
        assert "is the champion;" in capsys.readouterr().out
        assert store.champion(key).registry_version == 1 and registry.champion(name) == 1
    assert refresh(cfg, "HCP-POS", 10, posts, examples, stats)["model"] == "rolled back: v1 re-scored, none trained"


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

    def mlflow_status():
        return {s.name: s for s in ServiceManager(server.cfg).status()}["mlflow"]

    status = mlflow_status()
    assert not status.up and status.fix == "`focuscrawl services up --only mlflow`"
    # Right after the SIGKILL a probe may still reach the dying socket ("Connection reset by peer", seen
    # once); within seconds nothing listens.
    wait_until(lambda: "nothing listens" in mlflow_status().probe.detail, 15, "the killed MLflow's port closed")
