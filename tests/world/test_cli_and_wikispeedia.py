"""``python -m focuscrawl.world serve`` as a process, and the web built from real Wikispeedia pages."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import requests

from focuscrawl.world.web import build_web
from helpers import CHILD_TIMEOUT
from tests.world.conftest import START


def test_serve_command_starts_both_servers_and_stops_on_sigterm(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "focuscrawl.world", "serve", "--port", "0", "--eval-port", "0", "--data", "none",
         "--users", "2000", "--seed", "4", "--paused", "--error-rate", "0", "--robots-disallow", "/private/"],
        stdout=subprocess.PIPE, text=True, env={**__import__("os").environ, "FOCUSCRAWL_VAR": str(tmp_path)})
    try:
        info = json.loads(proc.stdout.readline())
        assert info["corpus"] == "GeneratedCorpus" and info["seed"] == 4
        assert "Disallow: /private/" in requests.get(info["world"] + "/robots.txt", timeout=10).text
        assert requests.get(info["eval"] + "/time", timeout=10).json() == {
            "paused": True, "sim_now": 1_700_000_000.0, "speedup": 60.0, "start_epoch": 1_700_000_000.0}
        assert requests.get(info["world"] + "/time", timeout=10).status_code == 404
    finally:
        proc.terminate()
    assert proc.wait(timeout=CHILD_TIMEOUT) == 0


def test_a_sigterm_sent_on_reading_the_ready_line_stops_the_world_cleanly(tmp_path):
    """The world printed the line saying it is up before it handled SIGTERM: a test that terminated it at once got -15
    (CI of 64e4d23). Here the signal comes while the line is written, the earliest a reader could send it."""
    snippet = (
        "import os, signal, sys\n"
        "from focuscrawl.world.__main__ import main\n"
        "class Out:\n"
        "    def __init__(self, w): self.w = w\n"
        "    def write(self, text):\n"
        "        n = self.w.write(text)\n"
        "        if text.startswith('{\"world\"'): os.kill(os.getpid(), signal.SIGTERM)\n"
        "        return n\n"
        "    def flush(self): self.w.flush()\n"
        "sys.stdout = Out(sys.stdout)\n"
        "sys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run(
        [sys.executable, "-c", snippet, "serve", "--port", "0", "--eval-port", "0", "--data", "none", "--users", "200",
         "--seed", "4", "--paused"],
        capture_output=True, text=True, timeout=CHILD_TIMEOUT, env={**__import__("os").environ, "FOCUSCRAWL_VAR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.splitlines()[0])["seed"] == 4


def serve(tmp_path, clock_file, *more) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "focuscrawl.world", "serve", "--port", "0", "--eval-port", "0", "--data", "none",
         "--users", "500", "--seed", "4", "--speedup", "3600", "--clock-file", str(clock_file), *more],
        stdout=subprocess.PIPE, text=True, env={**__import__("os").environ, "FOCUSCRAWL_VAR": str(tmp_path)})
    return proc, json.loads(proc.stdout.readline())


def test_a_restarted_world_resumes_its_clock_even_after_a_sigkill(tmp_path):
    """A world restarted at its start epoch served the past again (the revisitor wrote past periods twice)."""
    import signal

    from focuscrawl.services.process import wait_until

    clock_file = tmp_path / "world" / "clock.json"
    proc, info = serve(tmp_path, clock_file)
    try:
        wait_until(lambda: requests.get(info["eval"] + "/time", timeout=10).json()["sim_now"] > 1_700_000_000 + 3 * 3600,
                   CHILD_TIMEOUT, "three simulated hours", interval=0.2)
        wait_until(lambda: json.loads(clock_file.read_text())["sim_now"] > 1_700_000_000 + 3 * 3600, CHILD_TIMEOUT,
                   "the clock file past three simulated hours", interval=0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=CHILD_TIMEOUT)
    kept = json.loads(clock_file.read_text())["sim_now"]
    again, info = serve(tmp_path, clock_file, "--paused")
    try:
        now = requests.get(info["eval"] + "/time", timeout=10).json()
        assert now["sim_now"] == kept and now["start_epoch"] == 1_700_000_000.0  # same world, later time
    finally:
        again.terminate()
    assert again.wait(timeout=CHILD_TIMEOUT) == 0
    other, info = serve(tmp_path, clock_file, "--paused", "--seed", "5")  # another world starts at its epoch
    try:
        assert requests.get(info["eval"] + "/time", timeout=10).json()["sim_now"] == 1_700_000_000.0
    finally:
        other.terminate()
    assert other.wait(timeout=CHILD_TIMEOUT) == 0


@pytest.mark.slow
def test_wikispeedia_pages_have_real_titles_text_and_links(shared_data, cfg):
    web = build_web(0, START, shared_data, cfg.var_dir)
    assert len(web.names) > 4500 and "science.wiki.test" in web.hosts
    status, ctype, body = web.crawl("/site/people.wiki.test/wiki/Albert_Einstein", {}, START)
    page = body.decode()
    assert status == 200 and ctype.startswith("text/html")
    assert "<title>Albert Einstein</title>" in page and "relativity" in page
    assert 'href="/site/science.wiki.test/wiki/' in page  # a real outlink to another site (topic)
    # the graph is the real link graph, undirected
    v = json.loads(web.crawl(f"/graph/vertex/{web.index['Albert_Einstein']}.json", {}, START)[2])
    assert str(web.index["Physics"]) in v["neighbors"]
