"""The reddit project template against the world with OAuth required, on a real Kafka broker and Delta.

Issue 16 acceptance: "The reddit project runs against the world with OAuth required; the token and
secret appear in no log, status or table (test greps them)". The listing crawler process is
configured from projects/reddit.toml alone (``--project --site``), pointed at the world through
the template's ``${REDDIT_API_URL}``/``${REDDIT_TOKEN_URL}``; halfway the world revokes every token,
so the crawler must get a 401, fetch a new token and go on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests

from focuscrawl.services.process import wait_until
from focuscrawl.core.status_file import read_status
from focuscrawl.world import build_world
from focuscrawl.world.oauth import CLIENT_ID_ENV, CLIENT_SECRET_ENV, TOKEN_PATH, OAuthEmulator
from focuscrawl.world.server import WorldServer

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "fc-e2e-" + uuid.uuid4().hex[:8]
SECRET = "fc-e2e-secret-" + uuid.uuid4().hex


class RecordingOAuth(OAuthEmulator):
    """The world's emulator, keeping every token it hands out so the test can grep for them."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.handed_out: list[str] = []

    def token(self, authorization, body):
        status, headers, answer = super().token(authorization, body)
        if status == 200:
            self.handed_out.append(json.loads(answer)["access_token"])
        return status, headers, answer


def _spawn(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _topic_values(bootstrap: str, topic: str) -> list[bytes]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=5000, group_id=None)
    try:
        return [m.value for m in consumer]
    finally:
        consumer.close()


def _table_text(uri: Path) -> tuple[int, str]:
    """Rows of the Delta table and every string cell plus its transaction log, as one text."""
    from deltalake import DeltaTable

    table = DeltaTable(str(uri)).to_pyarrow_table()
    cells = [str(v) for col in table.columns for v in col.to_pylist() if isinstance(v, str)]
    logs = [p.read_text() for p in sorted((uri / "_delta_log").glob("*.json"))]
    return table.num_rows, "\n".join(cells + logs)


@pytest.mark.integration
def test_reddit_project_against_the_world_with_oauth_required(cfg, kafka_broker, shared_data, tmp_path, monkeypatch):
    from focuscrawl.project.loading import load_project
    from focuscrawl.stream.spec import FetchSpec

    world = build_world(11, data_dir=None, cache_dir=cfg.var_dir, web=False, rate_limit=600, users=3000,
                        base_rate=0.05, paused=True, warmup_seconds=1800.0, events_per_minute=30.0)
    world.oauth = RecordingOAuth(CLIENT_ID, SECRET, token_ttl=3600)
    topic = f"reddit-e2e-{uuid.uuid4().hex[:8]}"
    reddit = {"REDDIT_API_URL": cfg.world_url, "REDDIT_TOKEN_URL": cfg.world_url + TOKEN_PATH,
              "REDDIT_CLIENT_ID": CLIENT_ID, "REDDIT_CLIENT_SECRET": SECRET}
    env = {**os.environ, **reddit}
    for name, value in reddit.items():
        monkeypatch.setenv(name, value)  # the project file names the variables; its site reads them
    # what the platform's plan hands a fetching process for projects/reddit.toml's site "reddit"
    spec = FetchSpec(site=load_project(ROOT / "projects" / "reddit.toml").site("reddit")).write(tmp_path / "reddit.json")
    status_file = tmp_path / "status" / "crawler.json"
    table_uri = tmp_path / "lake" / "reddit_posts"
    logs = tmp_path / "logs"
    with WorldServer(world, cfg.bind_host, cfg.world_port, cfg.world_eval_port):
        crawler = _spawn(["streaming/crawler.py", "--fetch-spec", str(spec),
                          "--topic", topic, "--dead-letter-topic", topic + "-dl", "--priority-topic", topic + "-prio",
                          "--interval", "0.3", "--status-file", str(status_file)], logs / "crawler.log", env)
        consumer = _spawn(["streaming/consumer.py", "--table", "reddit_posts", "--topic", topic, "--group", topic,
                           "--table-uri", str(table_uri), "--batch-seconds", "1"], logs / "consumer.log", env)
        try:
            wait_until(lambda: read_status(status_file).get("pages", 0) >= 2, 180, "two pages crawled with a token")
            revoked = requests.post(cfg.world_eval_url + "/oauth", json={"revoke": True}, timeout=10).json()["revoked"]
            assert revoked >= 1
            pages_at_revoke = read_status(status_file)["pages"]
            wait_until(lambda: read_status(status_file).get("pages", 0) >= pages_at_revoke + 3, 120,
                       "three more pages after the tokens were revoked")
        finally:
            _stop(crawler)
        posts = _topic_values(cfg.kafka_bootstrap, topic)
        names = {json.loads(v)["name"] for v in posts}
        try:
            wait_until(lambda: table_uri.exists() and _table_text(table_uri)[0] == len(names), 120,
                       f"{len(names)} distinct posts landed in Delta")
        finally:
            _stop(consumer)
        served = [(e["path"].split("?")[0], e["status"]) for e in world.access_log.since(0)["entries"]]
        oauth = world.oauth.state()

    status = read_status(status_file)
    assert status["posts"] == len(posts) > 0
    # a 401 on the listing after the revocation, answered by a second token and the same page again
    listing = [s for path, s in served if path == "/r/all/new.json"]
    assert 401 in listing and listing[-1] == 200 and listing.index(401) >= 2
    assert oauth["issued"] == len(world.oauth.handed_out) >= 2 and oauth["unauthorized"] >= 1
    crawler_log = (logs / "crawler.log").read_text()
    assert "token refreshed" in crawler_log

    rows, table_text = _table_text(table_uri)
    assert rows == len(names)
    haystacks = {"crawler log": crawler_log, "consumer log": (logs / "consumer.log").read_text(),
                 "status file": status_file.read_text(), "Delta table": table_text,
                 "Kafka records": "\n".join(v.decode("utf-8", "replace") for v in posts)}
    for secret in [SECRET, *world.oauth.handed_out]:
        for where, text in haystacks.items():
            assert secret not in text, f"a credential leaked into the {where}"


@pytest.mark.integration
def test_world_cli_requires_oauth_with_credentials_from_its_environment():
    env = {**os.environ, CLIENT_ID_ENV: CLIENT_ID, CLIENT_SECRET_ENV: SECRET}
    argv = [sys.executable, "-m", "focuscrawl.world", "serve", "--port", "0", "--eval-port", "0", "--require-oauth",
            "--oauth-token-ttl", "60", "--users", "1000", "--data", "none", "--paused"]
    missing = subprocess.run(argv, cwd=ROOT, env={k: v for k, v in env.items() if k != CLIENT_SECRET_ENV},
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and CLIENT_SECRET_ENV in missing.stderr
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        started = json.loads(proc.stdout.readline())
        assert started["oauth"] is True
        url = started["world"]
        assert requests.get(url + "/r/all/new.json", timeout=10).status_code == 401
        assert requests.get(url + "/robots.txt", timeout=10).status_code == 200
        token = requests.post(url + TOKEN_PATH, data={"grant_type": "client_credentials"}, auth=(CLIENT_ID, SECRET),
                              timeout=10).json()
        assert token["token_type"] == "bearer" and token["expires_in"] == 60
        ok = requests.get(url + "/r/all/new.json", headers={"Authorization": f"bearer {token['access_token']}"}, timeout=10)
        assert ok.status_code == 200 and "x-ratelimit-remaining" in ok.headers
    finally:
        _stop(proc)
