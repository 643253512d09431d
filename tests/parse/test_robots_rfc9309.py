"""robots.txt cases written from RFC 9309's own text (sections cited per test)."""

from __future__ import annotations

import pytest

from focuscrawl.parse.robots import MAX_ROBOTS_BYTES, parse_robots, product_token

URL = "http://example.com/robots.txt"


def rules(text: str | bytes, agent: str = "focuscrawl"):
    return parse_robots(text, URL).robots.for_agent(agent)


@pytest.mark.parametrize("brk", ["\u0085", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_only_cr_lf_and_crlf_end_a_line(brk):
    # 2.2 (EOL = %x0D / %x0A / %x0D.0A): another line break inside a rule is part of the rule, so the
    # rule stays as long as written and blocks no more than it says.
    r = rules(f"User-agent: *\nDisallow: /a{brk}b\n")
    assert r.allowed("/a") and r.allowed("/a/other")
    assert not r.allowed("/a" + brk + "b")


@pytest.mark.parametrize("eol", ["\r", "\n", "\r\n"])
def test_each_rfc_line_ending_ends_a_line(eol):
    r = rules(eol.join(["User-agent: *", "Disallow: /x", "Allow: /x/y", ""]))
    assert (r.allowed("/x/z"), r.allowed("/x/y")) == (False, True)


def test_a_line_cut_at_the_500_kib_limit_is_not_read():
    # 2.5: a crawler parses at least 500 KiB; a line the limit cuts is incomplete, and
    # "Disallow: /private-area" read as "Disallow: /" would close the whole site.
    head = b"User-agent: *\nDisallow: /tmp\n"
    line = b"Disallow: /private-area\n"
    pad = b"#" * (MAX_ROBOTS_BYTES - len(head) - 12) + b"\n"
    body = head + pad + line
    assert len(head + pad) + len(b"Disallow: /") == MAX_ROBOTS_BYTES  # the limit falls after "Disallow: /"
    parsed = parse_robots(body, URL)
    r = parsed.robots.for_agent("x")
    assert not r.allowed("/tmp/a") and r.allowed("/index.html") and r.allowed("/private")
    assert any("cut by the 500 KiB limit" in j.reason for j in parsed.rejections)


def test_a_line_ending_exactly_at_the_limit_is_read():
    head = b"User-agent: *\n"
    rule = b"Disallow: /tmp\n"
    pad = b"#" * (MAX_ROBOTS_BYTES - len(head) - len(rule) - 1) + b"\n"
    body = head + pad + rule + b"Disallow: /other\n"
    assert len(head + pad + rule) == MAX_ROBOTS_BYTES
    r = rules(body, "x")
    assert not r.allowed("/tmp") and r.allowed("/other")


@pytest.mark.parametrize("rule,url,blocked", [
    # 2.2.3's table: "%2A" in a rule matches a literal "*" in the URL (encoded or not), "*" is the wildcard
    ("/path/file-with-a-%2A.html", "/path/file-with-a-*.html", True),
    ("/path/file-with-a-%2A.html", "/path/file-with-a-%2A.html", True),
    ("/path/file-with-a-%2A.html", "/path/file-with-a-x.html", False),
    # "%24" in a rule matches a literal "$"; a final "$" anchors the end
    ("/path/foo-%24", "/path/foo-$", True),
    ("/path/foo-%24", "/path/foo-%24", True),
    ("/path/foo-$", "/path/foo-", True),
    ("/path/foo-$", "/path/foo-bar", False),
    ("/path/foo-$", "/path/foo-$", False),
    ("/a*c", "/abbbc", True),
    ("/a*c", "/a*c", True),
    ("/a%2Ac", "/abc", False),
    # percent-encoding of other octets (2.2.2): "/foo/bar?baz=quz" and its encoded forms compare equal
    ("/foo/bar?baz=quz", "/foo/bar?baz=quz", True),
    ("/%7Ejoe", "/~joe/index.html", True),
    ("/~joe", "/%7ejoe/index.html", True),
    ("/ä", "/%C3%A4", True),
])
def test_special_characters_table(rule, url, blocked):
    r = rules(f"User-agent: *\nDisallow: {rule}\n")
    assert r.allowed(url) is (not blocked)


@pytest.mark.parametrize("line,crawler,applies", [
    # 2.2.1: the group is found by the crawler's product token, matched without case
    ("ExampleBot", "ExampleBot/1.0 (+https://example.com/bot)", True),
    ("examplebot", "ExampleBot/1.0", True),
    ("ExampleBot/2.1", "ExampleBot/1.0", True),
    ("ExampleBot extra words", "ExampleBot", True),
    ("ExampleBot-Image", "ExampleBot/1.0", False),
    ("ExampleBot", "ExampleBot-Image/1.0", False),
    ("ExampleBotter", "ExampleBot", False),
    ("Other ExampleBot", "ExampleBot", False),
    ("Mozilla/5.0 (compatible; ExampleBot)", "ExampleBot", False),
    ("Example_Bot", "example_bot", True),
])
def test_user_agent_line_matched_by_product_token(line, crawler, applies):
    r = rules(f"User-agent: {line}\nDisallow: /\n\nUser-agent: *\nAllow: /\n", crawler)
    assert r.allowed("/page") is (not applies)


def test_product_token_of_the_crawler():
    assert product_token("focuscrawl/0.1 (+mailto:ops@example.org)") == "focuscrawl"
    assert product_token("  ExampleBot-Image/1.0") == "ExampleBot-Image"
    assert product_token("(bad)") == ""
    assert rules("User-agent: *\nDisallow: /\n", "(bad)").allowed("/x") is False


def test_recovered_encoding_errors_are_flagged():
    parsed = parse_robots(b"User-agent: *\nDisallow: /caf\xe9\n", URL)
    assert not parsed.robots.for_agent("x").allowed("/caf\ufffd")
    assert any("not valid UTF-8" in r.reason and "1 undecodable" in r.reason for r in parsed.rejections)
