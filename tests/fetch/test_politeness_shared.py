"""One host's politeness across crawler instances (issue 19): a shared ledger, on a fake clock and
for real with two processes against one local host."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from focuscrawl.fetch.politeness import HostPoliteness, SharedHostLedger
from helpers import CHILD_TIMEOUT


def test_two_instances_sharing_a_ledger_keep_one_pause_on_a_fake_clock(tmp_path, fake_clock):
    clock = fake_clock
    a, b = (HostPoliteness(min_delay=2.0, ledger=SharedHostLedger(tmp_path, clock=clock, sleep=clock.sleep),
                           clock=clock, sleep=clock.sleep) for _ in range(2))
    starts = []
    for instance in (a, b, a, b, b):
        with instance.slot("http://h:80"):
            starts.append(clock())
            clock.sleep(0.5)  # the request takes half a second
    gaps = [y - x for x, y in zip(starts, starts[1:])]
    assert gaps == [2.5, 2.5, 2.5, 2.5]  # 0.5 s request + the 2 s pause, whichever instance fetched


def test_without_a_ledger_each_instance_keeps_only_its_own_pause(tmp_path, fake_clock):
    clock = fake_clock
    a, b = (HostPoliteness(min_delay=2.0, clock=clock, sleep=clock.sleep) for _ in range(2))
    starts = []
    for instance in (a, b):
        with instance.slot("http://h:80"):
            starts.append(clock())
    assert starts[1] - starts[0] == 0.0  # the defect the ledger removes


def test_retry_after_defers_every_instance(tmp_path, fake_clock):
    clock = fake_clock
    a, b = (HostPoliteness(min_delay=0.0, ledger=SharedHostLedger(tmp_path, clock=clock, sleep=clock.sleep),
                           clock=clock, sleep=clock.sleep) for _ in range(2))
    a.defer("http://h:80", 30.0)
    before = clock()
    with b.slot("http://h:80"):
        assert clock() - before >= 30.0


def test_slots_cap_in_flight_across_instances(tmp_path):
    ledger = SharedHostLedger(tmp_path)
    with ledger.turn("http://h:80", 0.0, slots=2), ledger.turn("http://h:80", 0.0, slots=2):
        assert ledger._take_slot("http://h:80", 2) is None  # both slots held
    fd = ledger._take_slot("http://h:80", 2)
    assert fd is not None


def test_a_slower_instance_paces_only_itself(tmp_path, fake_clock):
    """A loop's fetch budget (a long pause of its own) must not shut the host for the other instances:
    they owe the host the site's pause only."""
    clock = fake_clock

    def instance(own_pause):
        return HostPoliteness(min_delay=own_pause, clock=clock, sleep=clock.sleep).share(
            SharedHostLedger(tmp_path, clock=clock, sleep=clock.sleep), host_delay=0.1)

    slow, fast = instance(5.0), instance(0.1)
    with slow.slot("http://h:80"):
        pass
    before = clock()
    with fast.slot("http://h:80"):
        assert clock() - before == pytest.approx(0.1)  # the site's pause, not the slow one's 5 s
    with slow.slot("http://h:80"):
        assert clock() - before >= 5.0  # the slow instance keeps its own pace


INSTANCE = textwrap.dedent("""
    import sys
    from focuscrawl.config import settings
    from focuscrawl.fetch.site import fetcher_for_site
    from focuscrawl.project.model import Site
    base, n = sys.argv[1], int(sys.argv[2])
    site = Site(name="one", base_url=base, user_agent="focuscrawl-test/1 (+mailto:ops@example.org)",
                politeness_delay={delay}, obey_robots=False)
    with fetcher_for_site(site, settings()) as f:
        for i in range(n):
            f.fetch(f"{{base}}/page/{{i}}")
""")


@pytest.mark.parametrize("delay", [0.3])
def test_two_crawler_processes_against_one_host_keep_the_delay(site, tmp_path, delay):
    """Two OS processes, each with the fetcher of one project site (what every crawler process of a
    project builds), fetch from one host at the same time; the host sees the site's gap between any two."""
    for i in range(12):
        site.routes[f"/page/{i}"] = (200, {}, b"ok")
    env = {"FOCUSCRAWL_VAR": str(tmp_path), "FOCUSCRAWL_ALLOW_PRIVATE_HOSTS": f"127.0.0.1:{site.port}",
           "PATH": "/usr/bin:/bin"}
    script = INSTANCE.format(delay=delay)
    procs = [subprocess.Popen([sys.executable, "-c", script, site.url, "6"], env=env) for _ in range(2)]
    assert [p.wait(timeout=CHILD_TIMEOUT) for p in procs] == [0, 0]
    starts = sorted(t for t, path in site.log if path.startswith("/page/"))
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    print(f"two instances, delay {delay} s: {len(starts)} requests, minimum gap {min(gaps):.3f} s")
    assert len(starts) == 12
    assert min(gaps) >= delay
