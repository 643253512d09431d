"""The site clock (focuscrawl.fetch.clock): site time from the ``Date`` header, nothing else."""

from __future__ import annotations

import email.utils

import pytest

from focuscrawl.fetch.clock import SiteClock, SiteClockUnknown, parse_http_date, robots_url


class Wall:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def http_date(t: float) -> str:
    return email.utils.formatdate(int(t), usegmt=True)


def test_http_dates_parse_and_garbage_is_ignored():
    assert parse_http_date("Tue, 14 Nov 2023 22:13:20 GMT") == 1_700_000_000.0
    assert parse_http_date(None) is None and parse_http_date("not a date") is None
    clock = SiteClock(wall=Wall())
    clock.observe("not a date")
    with pytest.raises(SiteClockUnknown, match="fetch a page"):
        clock()


def test_rate_is_measured_from_responses_and_extrapolated_between_them():
    wall = Wall()
    clock = SiteClock(wall=wall, min_span_s=3.0)
    site = 1_700_000_000.0
    for _ in range(40):  # a world sped up 60x answering every 0.25 wall seconds
        clock.observe(http_date(site + 60 * (wall.t - 100.0)))
        wall.t += 0.25
    assert clock.rate() == pytest.approx(60.0, rel=0.02)
    wall.t += 10.0  # idle: the clock goes on at the measured rate
    assert clock() == pytest.approx(site + 60 * (wall.t - 100.0), abs=60)
    assert clock.jumps == 0


def test_reads_between_responses_fit_the_rate_once_and_a_response_or_the_window_fits_it_again(monkeypatch):
    """A crawler reads its clock (and ``wall_until``) far more often than a response comes: the fit over the window
    is made again only when its observations changed (a response, or one leaving the window), same values."""
    fits = []
    fit = SiteClock._fit
    monkeypatch.setattr(SiteClock, "_fit", staticmethod(lambda obs: fits.append(len(obs)) or fit(obs)))
    wall = Wall()
    clock = SiteClock(wall=wall, min_span_s=3.0, window_s=20.0)
    for _ in range(40):  # 60x, a response every 0.25 wall seconds
        clock.observe(1_700_000_000.0 + 60 * (wall.t - 100.0))
        wall.t += 0.25
    fits.clear()
    reads = [(clock(), clock.wall_until(clock() + 600), clock.rate()) for _ in range(1000)]
    assert len(fits) == 1 and len(set(reads)) == 1 and clock.rate() == pytest.approx(60.0, rel=0.02)
    clock.observe(1_700_000_000.0 + 60 * (wall.t - 100.0))
    clock()
    assert len(fits) == 2
    wall.t += 12.0  # the first observations leave the 20 s window: the fit is over the rest
    clock()
    assert len(fits) == 3 and fits[-1] < fits[-2]


def test_a_jump_of_the_site_clock_restarts_the_fit_and_time_never_goes_back():
    wall = Wall()
    clock = SiteClock(wall=wall)
    for _ in range(20):  # a paused world: Date stays put
        clock.observe(1_700_000_000.0)
        wall.t += 0.5
    assert clock.rate() == 0.0
    before = clock()
    clock.observe(1_700_000_000.0 + 7 * 86400)  # the world moved on a week
    assert clock.jumps == 1
    assert clock() == pytest.approx(1_700_000_000.0 + 7 * 86400, abs=2)
    clock.observe(1_700_000_000.0 + 7 * 86400)
    assert clock() >= before


def test_a_jump_before_the_rate_is_measured_is_not_taken_for_a_rate():
    wall = Wall()
    clock = SiteClock(wall=wall, min_span_s=3.0)
    clock.observe(1_700_000_000.0)
    wall.t += 1.0
    clock.observe(1_700_000_000.0 + 7 * 86400)  # a paused world moved on a week 1 s after the first response
    assert clock.jumps == 1
    for _ in range(10):  # paused again
        wall.t += 0.5
        clock.observe(1_700_000_000.0 + 7 * 86400)
    assert clock.rate() == 0.0 and clock() == pytest.approx(1_700_000_000.0 + 7 * 86400, abs=2)
    fast = SiteClock(wall=wall)
    for _ in range(3):  # a world sped up 60x, before the fit is trusted: a rate, not a jump
        fast.observe(1_700_000_000.0 + 60 * (wall.t - 100.0))
        wall.t += 0.5
    assert fast.jumps == 0


def test_record_timestamps_raise_the_clock_and_a_stale_clock_probes():
    wall = Wall()
    probes = []
    clock = SiteClock(probe=lambda: (probes.append(wall.t), clock.observe(1_700_000_500.0)), refresh_s=30, wall=wall)
    assert clock() == 1_700_000_500.0 and probes == [100.0]  # no response yet: it asks
    wall.t += 10
    clock()
    assert probes == [100.0]  # fresh: no probe
    clock.at_least(1_700_009_999.0)  # a record dated later was served
    assert clock() >= 1_700_009_999.0
    wall.t += 31
    clock()
    assert len(probes) == 2


def test_a_failing_probe_before_any_response_names_the_cause():
    def down():
        raise ConnectionError("refused")

    with pytest.raises(SiteClockUnknown, match="probe failed.*refused"):
        SiteClock(probe=down, wall=Wall())()


def test_robots_url_of_a_page():
    assert robots_url("http://127.0.0.1:18090/site/a.wiki.test/wiki/X?y=1") == "http://127.0.0.1:18090/robots.txt"


def test_wall_until_is_the_extrapolation_to_a_site_time_bounded_by_the_next_probe():
    wall, site = Wall(), 1_700_000_000.0
    clock = SiteClock(wall=wall, min_span_s=3.0, refresh_s=30.0)
    for _ in range(40):  # a world sped up 60x, answering every 0.25 wall seconds
        clock.observe(http_date(site + 60 * (wall.t - 100.0)))
        wall.t += 0.25
    now = clock()
    assert clock.wall_until(now - 1) == 0.0 and clock.wall_until(now) == 0.0
    assert clock.wall_until(now + 120) == pytest.approx(2.0, rel=0.05)  # 120 site seconds at 60x
    wall.t += clock.wall_until(now + 120)
    assert clock() == pytest.approx(now + 120, abs=0.01)
    # With a probe, no longer than until the clock goes stale (its next call asks the site again).
    clock.probe = lambda: None
    last = wall.t - 0.25 - 2.0  # the last response
    assert clock.wall_until(now + 60 * 3600) == pytest.approx(last + 30.0 + 0.001 - wall.t, abs=1e-6)
    wall.t = last + 31
    assert clock.wall_until(now + 60 * 3600) == 0.0
    assert SiteClock(wall=Wall()).wall_until(site) == 0.0  # no response yet: read the site now
