"""A tiny local site on a loopback port (allow-listed per test, ``helpers.HttpSite``), with an access log."""

from __future__ import annotations

import threading

import pytest

from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness, RetryPolicy
from helpers import HttpSite


class FakeClock:
    """Wall and monotonic time that only moves when someone sleeps: politeness without waiting."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.now += max(seconds, 0.0)


@pytest.fixture
def fake_clock():
    return FakeClock()


@pytest.fixture
def site():
    with HttpSite({"/robots.txt": (200, {}, b"User-agent: *\nDisallow: /private/\n")}) as s:
        yield s


@pytest.fixture
def make_fetcher(site):
    made = []

    def make(min_delay=0.0, clock=None, **kwargs):
        """A fetcher for ``site``; with ``clock`` (a FakeClock) its politeness waits on that clock, not for real."""
        kwargs.setdefault("guard", AddressGuard([f"127.0.0.1:{site.port}"]))
        kwargs.setdefault("retry", RetryPolicy(max_retries=2, base_delay=0.05, seed=1))
        timing = {"clock": clock, "sleep": clock.sleep} if clock is not None else {}
        f = Fetcher(user_agent="focuscrawl-test/1.0", politeness=HostPoliteness(min_delay=min_delay, **timing),
                    **kwargs)
        made.append(f)
        return f

    yield make
    for f in made:
        f.close()
