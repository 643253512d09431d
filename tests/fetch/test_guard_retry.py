import ipaddress
import socket

import pytest
from hypothesis import given, settings, strategies as st

from focuscrawl.fetch import AddressGuard, BlockedAddressError, FetchConnectionError, RetryPolicy
from focuscrawl.fetch.guard import address_category
from focuscrawl.fetch.retry import parse_retry_after


@pytest.mark.parametrize(
    "address,category",
    [
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("0.0.0.0", '"This host on this network"'),
        ("::", "Unspecified Address"),
        ("127.0.0.1", "Loopback"),
        ("127.8.9.10", "Loopback"),
        ("::1", "Loopback Address"),
        ("::ffff:127.0.0.1", "Loopback (inside ::ffff:7f00:1)"),
        ("::ffff:10.1.2.3", "Private-Use (inside ::ffff:a01:203)"),
        ("2002:0a00:0001::", "Private-Use (inside 2002:a00:1::)"),  # 6to4 wrapping 10.0.0.1
        ("169.254.1.1", "Link Local"),
        ("fe80::1", "Link-Local Unicast"),
        ("224.0.0.1", "Multicast"),
        ("ff02::1", "Multicast"),
        ("100.64.0.1", "Shared Address Space"),
        ("10.0.0.1", "Private-Use"),
        ("172.16.5.4", "Private-Use"),
        ("192.168.1.1", "Private-Use"),
        ("fc00::1", "Unique-Local"),
        ("240.0.0.1", "Reserved"),
        ("198.18.0.1", "Benchmarking"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_address_categories(address, category):
    assert address_category(ipaddress.ip_address(address)) == category


def fake(mapping):
    def resolve(host, port, **kw):
        if host not in mapping:
            raise socket.gaierror(-2, "Name or service not known")
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, 1, 6, "", (a, port)) for a in mapping[host]]

    return resolve


def test_allow_list_forms():
    guard = AddressGuard(
        ["127.0.0.1:18090", "world.local:8080", "10.9.0.0/16", "[::1]:9000", "192.168.7.7"],
        resolver=fake({"127.0.0.1": ["127.0.0.1"], "world.local": ["10.0.0.5"], "a.b": ["10.9.3.4"],
                       "::1": ["::1"], "192.168.7.7": ["192.168.7.7"], "public.example": ["93.184.216.34"]}),
    )
    assert guard.check_url("http://127.0.0.1:18090/x") == "127.0.0.1"
    assert guard.check_url("http://world.local:8080/") == "10.0.0.5"
    assert guard.check_url("https://a.b/") == "10.9.3.4"
    assert guard.check_url("http://[::1]:9000/") == "::1"
    assert guard.check_url("http://192.168.7.7:1234/") == "192.168.7.7"
    assert guard.check_url("https://public.example/") == "93.184.216.34"
    for url in ("http://127.0.0.1:18091/", "http://world.local:8081/", "http://[::1]:9001/"):
        with pytest.raises(BlockedAddressError):
            guard.check_url(url)


def test_any_internal_answer_blocks_the_host():
    guard = AddressGuard(resolver=fake({"mixed.example": ["93.184.216.34", "10.0.0.1"]}))
    with pytest.raises(BlockedAddressError) as err:
        guard.check_url("http://mixed.example/")
    assert (err.value.address, err.value.category) == ("10.0.0.1", "Private-Use")
    assert "add 'mixed.example:80'" in str(err.value)


def test_malformed_urls_are_typed_refusals():
    from focuscrawl.fetch import UnsupportedURLError

    for url in ("http://[", "http://h:99999/", "mailto:a@b", "//no-scheme/"):
        with pytest.raises(UnsupportedURLError):
            AddressGuard(resolver=fake({})).check_url(url)


def test_unresolvable_host():
    with pytest.raises(FetchConnectionError, match="cannot resolve"):
        AddressGuard(resolver=fake({})).check_url("http://nowhere.invalid/")


def test_default_settings_allow_only_the_world(cfg):
    guard = AddressGuard(cfg.allow_private_hosts)
    guard.check_url(cfg.world_url + "/r/x.json")
    with pytest.raises(BlockedAddressError):
        guard.check_url(f"http://127.0.0.1:{cfg.kafka_port}/")


def test_bad_allow_entry_names_the_format():
    with pytest.raises(ValueError, match="host:port, ip, or a CIDR"):
        AddressGuard(["host:notaport"])


def test_retry_after_forms():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_retry_waits():
    policy = RetryPolicy(max_retries=3, base_delay=1.0, max_delay=4.0, max_retry_after=60, seed=3)
    waits = [policy.wait(a) for a in range(4)]
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0 and 2.0 <= waits[2] <= 4.0 and waits[3] is None
    assert 30 <= policy.wait(0, {"Retry-After": "30"}) <= 33
    assert policy.wait(0, {"Retry-After": "61"}) is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_guard_never_crashes_on_any_url(url):
    guard = AddressGuard(resolver=fake({}))
    try:
        guard.check_url(url)
    except (BlockedAddressError, FetchConnectionError) as exc:
        assert str(exc)
    except Exception as exc:  # only the typed refusals may come out
        assert type(exc).__name__ == "UnsupportedURLError", exc


def test_fetcher_from_settings_takes_user_agent_and_allow_list(cfg):
    from focuscrawl.fetch import Fetcher

    with Fetcher.from_settings(cfg) as f:
        assert f.user_agent == cfg.user_agent
        assert f.session.headers["User-Agent"] == cfg.user_agent
        assert f.guard.allow == cfg.allow_private_hosts
        assert f.session.trust_env is False
