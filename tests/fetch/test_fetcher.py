import threading
import time

import pytest
import urllib3.util.connection

from focuscrawl.fetch import (
    AddressGuard,
    BlockedAddressError,
    HTTPStatusError,
    RedirectLoopError,
    ResponseTooLargeError,
    RetriesExhaustedError,
    RetryPolicy,
    RobotsDisallowedError,
    TooManyRedirectsError,
    UnexpectedContentTypeError,
    UnsupportedURLError,
)


@pytest.fixture
def connections(monkeypatch):
    """Every address a socket is opened to; anything but loopback fails the test before connecting."""
    seen = []
    real = urllib3.util.connection.create_connection

    def spy(address, *args, **kwargs):
        seen.append(address[0])
        assert address[0] in ("127.0.0.1", "::1"), f"a connection to {address} was attempted"
        return real(address, *args, **kwargs)

    monkeypatch.setattr(urllib3.util.connection, "create_connection", spy)
    return seen


def test_fetch_page_with_robots_and_user_agent(site, make_fetcher):
    seen_ua = []
    site.routes["/a"] = lambda h: (seen_ua.append(h.headers["User-Agent"]) or (200, {"Content-Type": "application/json; charset=utf-8"}, b'{"x": 1}'))
    result = make_fetcher().fetch(site.url + "/a", accept=["application/json"])
    assert (result.status, result.body, result.content_type) == (200, b'{"x": 1}', "application/json")
    assert site.paths() == ["/robots.txt", "/a"]
    assert seen_ua == ["focuscrawl-test/1.0"]
    assert make_fetcher().get(site.url + "/a") == b'{"x": 1}'


def test_robots_disallow_refuses_without_fetching_the_page(site, make_fetcher):
    site.routes["/public"] = (200, {}, b"ok")
    f = make_fetcher()
    with pytest.raises(RobotsDisallowedError, match="drop it from the frontier"):
        f.fetch(site.url + "/private/x")
    f.fetch(site.url + "/public")
    assert site.paths() == ["/robots.txt", "/public"]  # robots.txt fetched once, cached


def test_robots_4xx_allows_all_and_5xx_disallows_all(site, make_fetcher):
    site.routes["/robots.txt"] = (404, {}, b"")
    site.routes["/private/x"] = (200, {}, b"ok")
    assert make_fetcher().fetch(site.url + "/private/x").body == b"ok"

    site.routes["/robots.txt"] = (500, {}, b"")
    site.log.clear()
    with pytest.raises(RobotsDisallowedError):
        make_fetcher().fetch(site.url + "/private/x")
    assert site.paths() == ["/robots.txt"]


def test_robots_cache_expires(site, make_fetcher, fake_clock):
    """On the fetcher's clock (a busy machine's real one let the TTL pass between the first two fetches)."""
    site.routes["/p"] = (200, {}, b"ok")
    f = make_fetcher(robots_ttl=0.3, clock=fake_clock)
    f.fetch(site.url + "/p")
    f.fetch(site.url + "/p")
    fake_clock.sleep(0.35)
    f.fetch(site.url + "/p")
    assert site.paths() == ["/robots.txt", "/p", "/p", "/robots.txt", "/p"]


# Politeness on an injected clock (issue 19): the site logs arrivals on the fetcher's FakeClock,
# which moves only when politeness sleeps, so the gaps are the waits the fetcher owed, exactly.
def test_politeness_min_delay_between_requests(site, make_fetcher, fake_clock):
    site.clock = fake_clock
    site.routes["/p"] = (200, {}, b"ok")
    f = make_fetcher(min_delay=0.3, clock=fake_clock)
    for _ in range(3):
        f.fetch(site.url + "/p")
    starts = site.times("/p")
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert gaps == pytest.approx([0.3, 0.3])


def test_robots_crawl_delay_is_honoured(site, make_fetcher, fake_clock):
    site.clock = fake_clock
    site.routes["/robots.txt"] = (200, {}, b"User-agent: focuscrawl-test\nCrawl-delay: 0.4\n")
    site.routes["/p"] = (200, {}, b"ok")
    f = make_fetcher(min_delay=0.0, clock=fake_clock)
    f.fetch(site.url + "/p")
    f.fetch(site.url + "/p")
    a, b = site.times("/p")
    assert b - a == pytest.approx(0.4)


def test_one_request_in_flight_per_host(site, make_fetcher):
    site.routes["/slow"] = lambda h: (time.sleep(0.1), (200, {}, b"ok"))[1]
    f = make_fetcher()
    threads = [threading.Thread(target=f.fetch, args=(site.url + "/slow",)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert site.paths().count("/slow") == 4
    assert site.max_in_flight == 1


def test_429_retry_after_is_honoured(site, make_fetcher, fake_clock):
    calls = []

    def limited(h):
        calls.append(fake_clock())
        return (429, {"Retry-After": "1"}, b"slow down") if len(calls) == 1 else (200, {}, b"ok")

    site.routes["/p"] = limited
    assert make_fetcher(clock=fake_clock).fetch(site.url + "/p").body == b"ok"
    assert len(calls) == 2 and 1.0 <= calls[1] - calls[0] < 1.5


def test_503_backs_off_then_gives_up_naming_the_cause(site, make_fetcher):
    site.routes["/p"] = (503, {}, b"busy")
    with pytest.raises(RetriesExhaustedError, match="HTTP 503 3 times") as err:
        make_fetcher().fetch(site.url + "/p")
    assert err.value.status == 503 and site.paths().count("/p") == 3


def test_retry_after_too_long_is_not_waited_for(site, make_fetcher):
    site.routes["/p"] = (429, {"Retry-After": "3600"}, b"")
    with pytest.raises(RetriesExhaustedError, match="max_retry_after"):
        make_fetcher(retry=RetryPolicy(max_retry_after=10)).fetch(site.url + "/p")
    assert site.paths().count("/p") == 1


def test_redirects_followed_loop_and_limit(site, make_fetcher):
    site.routes["/r1"] = (301, {"Location": "/r2"}, b"")
    site.routes["/r2"] = (302, {"Location": site.url + "/final"}, b"")
    site.routes["/final"] = (200, {}, b"here")
    result = make_fetcher().fetch(site.url + "/r1")
    assert (result.url, result.body, result.redirects) == (site.url + "/final", b"here", (site.url + "/r1", site.url + "/r2"))

    site.routes["/loop-a"] = (302, {"Location": "/loop-b"}, b"")
    site.routes["/loop-b"] = (302, {"Location": "/loop-a"}, b"")
    with pytest.raises(RedirectLoopError, match="loop"):
        make_fetcher().fetch(site.url + "/loop-a")

    for i in range(10):
        site.routes[f"/chain{i}"] = (302, {"Location": f"/chain{i + 1}"}, b"")
    with pytest.raises(TooManyRedirectsError, match="more than 3 times"):
        make_fetcher(max_redirects=3).fetch(site.url + "/chain0")


def test_a_redirect_to_a_page_the_caller_has_is_not_followed(site, make_fetcher):
    """``stop_at``: the chain is walked hop by hop until a target the caller already has; that target is not
    requested, and the result is the redirect pointing at it (a target it does not have is fetched as ever)."""
    site.routes["/s1"] = (301, {"Location": "/s2"}, b"")
    site.routes["/s2"] = (308, {"Location": "/have"}, b"")
    site.routes["/have"] = (200, {}, b"page")
    fetcher = make_fetcher()
    result = fetcher.fetch(site.url + "/s1", stop_at=lambda url: url == site.url + "/have")
    assert (result.url, result.status, result.body) == (site.url + "/have", 308, b"")
    assert result.redirects == (site.url + "/s1", site.url + "/s2")
    assert site.paths().count("/have") == 0 and site.paths().count("/s2") == 1
    result = fetcher.fetch(site.url + "/s1", stop_at=lambda url: False)
    assert (result.url, result.status, result.body) == (site.url + "/have", 200, b"page")


def test_redirect_into_robots_disallowed_path_is_refused(site, make_fetcher):
    site.routes["/go"] = (302, {"Location": "/private/secret"}, b"")
    with pytest.raises(RobotsDisallowedError):
        make_fetcher().fetch(site.url + "/go")
    assert "/private/secret" not in site.paths()


def test_oversize_body_is_refused(site, make_fetcher):
    site.routes["/big"] = (200, {}, b"x" * 5000)
    with pytest.raises(ResponseTooLargeError, match="declares 5000 bytes"):
        make_fetcher(max_bytes=1000).fetch(site.url + "/big")

    def lying(h):  # no Content-Length: the limit must hold while streaming
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(b"y" * 5000)
        h.close_connection = True
        raise _Sent()

    site.routes["/stream"] = lying
    with pytest.raises(ResponseTooLargeError, match="sent more than max_bytes=1000"):
        make_fetcher(max_bytes=1000).fetch(site.url + "/stream")


class _Sent(Exception):
    """Ends the handler after it wrote a raw response itself."""


def test_content_type_check(site, make_fetcher):
    site.routes["/page"] = (200, {"Content-Type": "text/html; charset=utf-8"}, b"<html></html>")
    f = make_fetcher()
    assert f.fetch(site.url + "/page", accept=["text/*"]).content_type == "text/html"
    with pytest.raises(UnexpectedContentTypeError, match="text/html, not one of"):
        f.fetch(site.url + "/page", accept=["application/json"])


def test_http_error_status(site, make_fetcher):
    with pytest.raises(HTTPStatusError) as err:
        make_fetcher().fetch(site.url + "/missing")
    assert err.value.status == 404


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[fd00:ec2::254]/"])
def test_redirect_to_internal_address_is_refused_before_connecting(site, make_fetcher, connections, target):
    site.routes["/go"] = (302, {"Location": target}, b"")
    with pytest.raises(BlockedAddressError, match="FOCUSCRAWL_ALLOW_PRIVATE_HOSTS"):
        make_fetcher().fetch(site.url + "/go")
    assert set(connections) == {"127.0.0.1"}
    assert site.paths() == ["/robots.txt", "/go"]


def test_loopback_port_not_allow_listed_is_refused(site, make_fetcher, connections):
    f = make_fetcher(guard=AddressGuard([f"127.0.0.1:{site.port + 1}"]))
    with pytest.raises(BlockedAddressError, match="Loopback"):
        f.fetch(site.url + "/p")
    assert connections == [] and site.paths() == []


def test_connection_goes_to_the_checked_address(site, make_fetcher, connections):
    # "world.test" exists only in this resolver: the fetch works only if the socket is opened
    # to the address the guard resolved, not to a second DNS lookup.
    def resolver(host, port, **kw):
        assert host == "world.test"
        return [(2, 1, 6, "", ("127.0.0.1", port))]

    f = make_fetcher(guard=AddressGuard([f"world.test:{site.port}"], resolver=resolver))
    site.routes["/p"] = (200, {}, b"ok")
    assert f.fetch(f"http://world.test:{site.port}/p").body == b"ok"


def test_dns_rebinding_is_caught_at_connect_time(site, make_fetcher, connections):
    answers = iter(["127.0.0.1"] + ["10.0.0.1"] * 10)

    def rebinding(host, port, **kw):
        return [(2, 1, 6, "", (next(answers), port))]

    f = make_fetcher(guard=AddressGuard([f"127.0.0.1:{site.port}"], resolver=rebinding), obey_robots=False)
    with pytest.raises(BlockedAddressError, match="10.0.0.1"):
        f.fetch(f"http://rebind.test:{site.port}/p")
    assert connections == []


def test_non_http_urls_are_refused(make_fetcher):
    for url in ("file:///etc/passwd", "ftp://example.com/", "http:///nohost", "gopher://x/"):
        with pytest.raises(UnsupportedURLError):
            make_fetcher().fetch(url)
