"""The fault and load suite's harness (issue 8 point 5, issue 10 point 2): the world in the test process
on the configured ports (the SSRF guard's allow-list), crawler and consumer processes, and what the
world's access log says was served.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import requests
from deltalake import DeltaTable

from focuscrawl.services.process import wait_until
from stream_positions import delta_lag

ROOT = Path(__file__).resolve().parents[2]


class LiveWorld:
    """A generated world served on the configured ports; ``down()``/``up()`` make it a dead host."""

    def __init__(self, cfg, **kwargs) -> None:
        from focuscrawl.world import build_world

        self.cfg = cfg
        self.world = build_world(11, data_dir=None, cache_dir=cfg.var_dir, web=False, rate_limit=0, **kwargs)
        self.server = None

    @property
    def url(self) -> str:
        return self.cfg.world_url

    def up(self) -> None:
        from focuscrawl.world.server import WorldServer

        self.server = WorldServer(self.world, self.cfg.bind_host, self.cfg.world_port, self.cfg.world_eval_port).start()

    def down(self) -> None:
        self.server.stop()
        self.server = None

    def faults(self, **switches) -> None:
        requests.post(self.cfg.world_eval_url + "/faults", json=switches, timeout=10).raise_for_status()

    def pause(self) -> None:
        requests.post(self.cfg.world_eval_url + "/clock", json={"pause": True}, timeout=10).raise_for_status()

    def access_log(self) -> list[dict]:
        out, since = [], 0
        while True:
            got = requests.get(self.cfg.world_eval_url + "/access_log", params={"since": since}, timeout=30).json()
            out += got["entries"]
            if got["next"] == since:
                return out
            since = got["next"]

    def requests_of(self, client: str, fault: str | None = None) -> int:
        """Requests of ``client`` the world logged so far (only those that met ``fault``, if given);
        read in-process, so also while the world is down."""
        got = self.world.access_log.since(0, limit=2**31)["entries"]
        return sum(1 for e in got if e["client"] == client and (fault is None or e["fault"] == fault))

    def listing_names(self) -> set[str]:
        """Every post the listing shows now, read as a judge (its own client id, so not in the crawler's log)."""
        names, after = set(), None
        while True:
            params = {"limit": 100, **({"after": after} if after else {})}
            doc = requests.get(self.url + "/r/all/new.json", params=params, headers={"X-Client-Id": "judge"},
                               timeout=30).json()
            names |= {c["data"]["name"] for c in doc["data"]["children"]}
            after = doc["data"]["after"]
            if not after:
                return names


class Proc:
    """One crawler or consumer process; its output goes to ``log``."""

    def __init__(self, name: str, args: list[str], env: dict, log_dir: Path) -> None:
        self.name, self.args, self.env = name, args, env
        self.log = log_dir / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.kills = 0

    def start(self) -> "Proc":
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, *self.args], cwd=ROOT, env=self.env,
                                         stdout=log, stderr=subprocess.STDOUT)
        return self

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.kills += 1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""


class Pipeline:
    """Crawler and consumer processes over one topic pair and one lake, with a fresh group."""

    def __init__(self, cfg, tmp_path: Path, topic: str, broker, politeness: float = 0.3) -> None:
        self.cfg, self.topic, self.dl_topic = cfg, topic, topic + "-dl"
        self.broker = broker  # every process of the pipeline talks to this one (--bootstrap)
        self.lake = tmp_path / "lake"
        self.env = {**os.environ, "FOCUSCRAWL_LAKE": str(self.lake), "PYTHONUNBUFFERED": "1"}
        self.tmp = tmp_path
        self.politeness = politeness
        self.procs: list[Proc] = []

    def crawler(self, name: str = "crawler") -> Proc:
        args = [str(ROOT / "streaming" / "crawler.py"), "--base-url", self.cfg.world_url, "--topic", self.topic,
                "--dead-letter-topic", self.dl_topic, "--priority-topic", self.topic + "-prio",
                "--politeness-delay", str(self.politeness), "--interval", "0",
                "--robots-unreachable-ttl", "5",
                "--status-file", str(self.tmp / f"{name}.json"), "--bootstrap", self.broker.url]
        return self._add(Proc(name, args, self.env, self.tmp))

    def source(self, table: str) -> tuple[str, str]:
        """(topic, consumer group) of the landing into ``table``."""
        return (self.topic if table == "reddit_posts" else self.dl_topic), f"{self.topic}-{table}"

    def consumer(self, name: str = "consumer", table: str = "reddit_posts") -> Proc:
        topic, group = self.source(table)
        args = [str(ROOT / "streaming" / "consumer.py"), "--topic", topic, "--table", table,
                "--group", group, "--batch-size", "500", "--batch-seconds", "0.5",
                "--session-timeout-ms", "6000", "--bootstrap", self.broker.url,
                "--status-file", str(self.tmp / f"{name}.json")]
        return self._add(Proc(name, args, self.env, self.tmp))

    def lag(self, table: str) -> int | None:
        """Records of the table's topic its Delta positions are not past yet (``tests/stream_positions.py``)."""
        topic, group = self.source(table)
        return delta_lag(self.cfg, str(self.lake), table, group, topic, self.broker.url)

    def landed(self, *tables: str) -> bool:
        """Every record now in these tables' topics is behind their Delta positions."""
        return all(self.lag(t) == 0 for t in tables)

    def _add(self, proc: Proc) -> Proc:
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for p in self.procs:
            p.stop()

    def table(self, name: str):
        try:
            return DeltaTable(str(self.lake / name)).to_pyarrow_table()
        except Exception:  # noqa: BLE001 - not created yet
            return None

    def rows(self, name: str) -> int:
        t = self.table(name)
        return 0 if t is None else t.num_rows

    def names(self) -> Counter:
        t = self.table("reddit_posts")
        return Counter(t.column("name").to_pylist()) if t is not None else Counter()


def wait_for(check, timeout: float, what: str, procs: list[Proc] = ()):
    """``check()``'s first truthy value (``wait_until``, every half second); a timeout fails the test
    with the processes' last log lines."""
    try:
        return wait_until(check, timeout, what, interval=0.5)
    except TimeoutError as exc:
        logs = "\n".join(f"--- {p.name}\n{p.tail()}" for p in procs)
        raise AssertionError(f"{exc}\n{logs}") from None


def served_to(log: list[dict], client: str) -> set[str]:
    return {n for e in log if e["client"] == client for n in e["things"]}


def malformed_bodies(log: list[dict], client: str) -> int:
    """Listing bodies the world corrupted on their way to ``client`` (each one a dead letter owed)."""
    return sum(1 for e in log if e["client"] == client and e["fault"] == "malformed" and e["status"] == 200
               and e["path"].startswith("/r/"))
