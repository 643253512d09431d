"""The services a platform started are supervised like its processes (issue 33, point 2): a killed service
is started again (a killed world resumes its clock), a failing restart backs off, `status` says what the
watch did, and a killed process's children (Airflow's LocalExecutor workers) are stopped before it restarts."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest

from focuscrawl.platform.service_watch import DOWN, UP, ServiceWatch, watched
from focuscrawl.platform.status import render
from focuscrawl.services.process import ManagedProcess, group_members, wait_until


class FakeService:
    def __init__(self, fail: int = 0) -> None:
        self.up, self.fail, self.starts = True, fail, 0

    def alive(self) -> bool:
        return self.up

    def start(self) -> None:
        self.starts += 1
        if self.fail:
            self.fail -= 1
            raise RuntimeError("port 9092 taken\nmore lines")
        self.up = True


def settle(watch: ServiceWatch) -> None:
    for t in list(watch._restarts.values()):
        t.join(5)


def test_two_missed_probes_restart_a_service_and_status_says_so(tmp_path):
    svc, now = FakeService(), [100.0]
    watch = ServiceWatch({"kafka": svc}, tmp_path, clock=lambda: now[0])
    watch.step()
    assert watch.states["kafka"].state == UP and svc.starts == 0
    svc.up = False
    watch.step()  # one miss: a slow probe is not a dead service
    assert svc.starts == 0 and watch.states["kafka"].state == UP
    watch.step()
    settle(watch)
    s = watch.states["kafka"]
    assert svc.starts == 1 and svc.up and (s.state, s.restarts, s.last_restart_at) == (UP, 1, 100.0)
    assert watched(tmp_path)["kafka"]["restarts"] == 1
    doc = {"services": {"kafka": {"up": True, "url": "x", "watch": watched(tmp_path)["kafka"]}}}
    assert "kafka up (1 restart)" in render(doc)


def test_status_names_each_down_service_s_fix_the_watch_where_it_watches(tmp_path, monkeypatch):
    """Nothing listens on these ports: each service is down by its probe; the one the platform's watch restarts
    is left to it, the others get the command that starts them."""
    from focuscrawl.config import settings
    from focuscrawl.platform.status import services

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path))
    monkeypatch.setenv("FOCUSCRAWL_PORT_OFFSET", "7770")  # ports no test run uses
    svc = FakeService()
    watch = ServiceWatch({"kafka": svc}, tmp_path, misses=5)
    svc.up = False
    watch.step()
    started = time.monotonic()
    doc = {"services": services(settings())}
    assert time.monotonic() - started < 10  # probes refused at once: nothing waits out a timeout
    kafka, airflow = doc["services"]["kafka"], doc["services"]["airflow"]
    assert not kafka["up"] and kafka["fix"] == "none needed: the running platform's watch restarts it"
    assert not airflow["up"] and airflow["fix"] == "`focuscrawl services up --only airflow`" and not airflow["ours"]
    text = render(doc)
    assert "kafka down" in text and "fix: none needed: the running platform's watch restarts it" in text
    assert "(start: `focuscrawl services up --only spark-connect,mlflow,airflow,world`)" in text
    assert "nothing listens on" in text


def test_a_failing_restart_backs_off_doubling_and_names_its_error(tmp_path):
    svc, now = FakeService(fail=2), [0.0]
    watch = ServiceWatch({"world": svc}, tmp_path, misses=1, clock=lambda: now[0])
    svc.up = False
    watch.step()
    settle(watch)
    s = watch.states["world"]
    assert (s.state, s.failed_restarts, s.next_try_at, s.last_error) == (DOWN, 1, 1.0, "port 9092 taken")
    watch.step()  # within the back-off: no try
    assert svc.starts == 1
    now[0] = 1.0
    watch.step()
    settle(watch)
    assert svc.starts == 2 and s.next_try_at == 3.0  # 1 s, then 2 s
    doc = {"services": {"world": {"up": False, "url": "x", "watch": watched(tmp_path)["world"]}}}
    text = render(doc)
    assert "world down (restart failed: port 9092 taken; retried by the platform)" in text
    assert "services up --only" not in text  # the platform is on it
    now[0] = 3.0
    watch.step()
    settle(watch)
    assert svc.starts == 3 and (s.state, s.restarts, s.failed_restarts) == (UP, 1, 0)


def test_a_stopped_watch_restarts_nothing(tmp_path):
    svc = FakeService()
    watch = ServiceWatch({"kafka": svc}, tmp_path, every=0.05, misses=1)
    watch.start()
    watch.stop()
    svc.up = False
    time.sleep(0.3)
    assert svc.starts == 0 and not watch.status_file.exists()


def test_the_children_a_killed_process_left_in_its_group_are_stopped_before_it_starts_again(tmp_path):
    """As a SIGKILLed Airflow scheduler leaves its LocalExecutor workers: the leader dies, its child lives on
    in the group; the next start stops that group first, so no orphan is left."""
    proc = ManagedProcess("leader", tmp_path / "run", tmp_path / "logs",
                          command=[sys.executable, "-c", "import subprocess, time; "
                                   "subprocess.Popen(['sleep', '300']); time.sleep(300)"],
                          env={"MARK": str(tmp_path)})  # the child runs out of our folder (its environment)
    first = proc.start()
    wait_until(lambda: len(group_members(first)) == 2, 20, "the leader's child")
    child = [p for p in group_members(first) if p != first][0]
    os.kill(first, signal.SIGKILL)
    proc._popen.wait(10)
    assert group_members(first) == [child]  # the orphan
    second = proc.start()
    try:
        assert second != first and group_members(first) == []
    finally:
        proc.stop(timeout=5)


@pytest.mark.integration
def test_a_killed_world_is_started_again_and_resumes_its_clock(tmp_path, monkeypatch):
    """The real world service (its own process on the configured ports), SIGKILLed: the watch starts it
    again within a minute, and its simulated clock goes on from where it was (``--clock-file``)."""
    from focuscrawl.config import settings
    from focuscrawl.services.manager import WorldService

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    cfg = settings()
    world = WorldService(cfg, ["--speedup", "60"])
    clock = tmp_path / "var" / "world" / "clock.json"
    sim_now = lambda: json.loads(clock.read_text())["sim_now"]  # noqa: E731
    world.start()
    watch = ServiceWatch({"world": world}, cfg.var_dir, every=0.5)
    try:
        watch.start()
        wait_until(lambda: clock.exists() and sim_now(), 30, "the world's clock file")
        time.sleep(2)
        old = world.process.pid()
        world.process.kill()
        kept = sim_now()
        wait_until(lambda: world.healthy() and world.process.pid() != old, 90, "the world started again")
        time.sleep(2)  # the new process has written its clock: from where the old one stopped, not its epoch
        assert sim_now() >= kept + 60
        assert watch.states["world"].restarts == 1 and watched(cfg.var_dir)["world"]["state"] == UP
    finally:
        watch.stop()
        world.stop()
