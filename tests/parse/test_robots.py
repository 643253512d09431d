"""robots.txt outcomes RFC 9309 defines, on crawler-commons' real and edge-case files and its inline cases."""

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from focuscrawl.parse.robots import ALLOW_ALL, DISALLOW_ALL, MAX_ROBOTS_BYTES, parse_robots, product_token

URL = "http://domain.com/robots.txt"


@pytest.fixture(scope="module")
def robots_dir(shared_data):
    return Path(shared_data) / "crawler-commons" / "src" / "test" / "resources" / "robots"


def rules(robots_dir, name, agent):
    return parse_robots((robots_dir / name).read_bytes(), URL).robots.for_agent(agent)


def allowed(r, *paths):
    return [r.allowed("http://domain.com" + p) for p in paths]


def test_every_file_parses(robots_dir):
    files = sorted(robots_dir.glob("*.txt"))
    assert len(files) == 24
    for f in files:
        parsed = parse_robots(f.read_bytes(), URL)
        assert parsed.robots.groups, f.name


# (file, agent, paths that must be allowed, paths that must be disallowed)
CASES = [
    ("rfc9309-example-simple-robots.txt", "foobot", ["/example/page.html", "/example/allowed.gif"], ["/", "/example/", "/x.gif"]),
    ("rfc9309-example-simple-robots.txt", "barbot", ["/", "/example/other.html"], ["/example/page.html"]),
    ("rfc9309-example-simple-robots.txt", "BazBot/2.0", ["/"], ["/example/page.html"]),
    ("rfc9309-example-simple-robots.txt", "quxbot", ["/", "/example/", "/a.gif"], []),
    ("rfc9309-example-simple-robots.txt", "otherbot", ["/publications/", "/a.gif?x", "/"], ["/example/", "/a.gif", "/p/b.gif"]),
    ("rfc9309-example-longest-match-robots.txt", "foobot", ["/example/page/", "/example/page/x.gif"], ["/example/page/disallowed.gif"]),
    ("rfc9309-example-rule-group-merging.txt", "ExampleBot", ["/qux"], ["/foo", "/bar", "/baz"]),
    ("rfc9309-example-rule-group-merging.txt", "bazbot", ["/foo", "/bar"], ["/baz"]),
    ("rfc9309-example-rule-group-merging.txt", "otherbot", ["/baz"], ["/foo", "/bar"]),
    # The file's comment says /login/ binds mybot too; RFC 9309 2.2.1 merges only groups naming the
    # token, and the second yourbot group does not name mybot, so mybot may fetch /login/.
    ("crawl-delay-group-merging.txt", "mybot", ["/", "/public/", "/login/"], ["/private/"]),
    ("crawl-delay-group-merging.txt", "yourbot", ["/"], ["/private/", "/login/"]),
    ("crawl-delay-group-merging.txt", "otherbot", ["/private/", "/login/"], []),
    # Here a Clean-Param record sits between "User-agent: mybot" and "User-agent: yourbot"; other
    # records do not end a group (RFC 9309 2.2.4), so both names share the /login/ rule.
    ("extensions-group-merging.txt", "mybot", ["/", "/public/"], ["/private/", "/login/"]),
    ("extensions-group-merging.txt", "yourbot", ["/"], ["/private/", "/login/"]),
    ("extensions-group-merging.txt", "otherbot", ["/llms.txt"], ["/", "/private/"]),
    ("extension-robots.txt", "mybot", ["/", "/secret/"], ["/private/"]),
    ("extension-robots.txt", "otherbot", ["/private/"], ["/admin/"]),
    ("merge-rules.txt", "wget", ["/foo/bar/bar.txt", "/chk/bar/bar.txt"], ["/tmp/bar/bar.txt"]),
    ("merge-rules.txt", "testy", [], ["/", "/foo"]),
    ("precedence-of-rules.txt", "wget", ["/", "/foo/bar", "/index.html"], ["/bar/foo"]),
    ("precedence-of-rules.txt", "testy", ["/", "/foo/bar"], ["/foo/blue", "/foo/", "/foo/tar"]),
    ("directive-typos-robots.txt", "bot1", ["/"], ["/desallow/", "/dissalow/"]),
    ("directive-typos-robots.txt", "bot2", ["/"], ["/useragent/"]),
    ("directive-typos-robots.txt", "bot3", ["/"], ["/useg-agent/"]),
    ("directive-typos-robots.txt", "bot4", ["/"], ["/useragent-no-colon/"]),
    ("format-errors-robots.txt", "bot1", ["/"], ["/whitespace-before-colon/", "/no-colon/"]),
    ("format-errors-robots.txt", "bot2", ["/"], ["/no-colon-useragent/"]),
    ("format-errors-robots.txt", "bot3", ["/whitespace-before-colon/"], ["/other"]),
    ("malformed-path.txt", "bot1", ["/wiki/"], ["/wiki/Wikipedia_talk:Mediation_Committee/"]),
    ("many-user-agents.txt", "wget", [], ["/"]),
    ("many-user-agents.txt", "mysuperlongbotnamethatmatchesnothing", ["/"], ["/bot-trap/"]),
    ("robots-with-utf8-bom.txt", "foobot", ["/"], ["/profile", "/a/output/print"]),
    ("robots-with-utf16le-bom.txt", "foobot", ["/"], ["/profile", "/login.aspx"]),
    ("robots-with-utf16be-bom.txt", "foobot", ["/"], ["/profile", "/login.aspx"]),
    ("robots-with-utf16be-bom.txt", "Googlebot", ["/"], ["/profile"]),
    ("twitter.com-robots.txt", "Googlebot", ["/jack"], ["/search?q=x", "/jack/with_friends"]),
    ("twitter.com-robots.txt", "otherbot", ["/jack"], ["/?lang=en"]),
    ("wildcards.txt", "Any-darn-crawler", ["/wishlist/universal/page", "/gp/wishlist/universal"], ["/wishlist/bogus", "/anydirectoryhere/gcrnsts", "/gp/registry/wishlist/x/reserve"]),
    ("www.flot.com-robots.txt", "foobot", ["/", "/image/"], ["/img/", "/admin/x"]),
    ("dos-line-endings.txt", "bot1", ["/"], []),
    ("astore.amazon.com-robots.txt", "bot1", ["/"], []),
    ("extended-standard-robots.txt", "bot3", ["/"], []),
    ("sitemap-robots.txt", "bot1", ["/"], []),
    ("relative-sitemap-robots.txt", "bot1", ["/", "/cachex"], ["/cache/", "/files/x"]),
]


@pytest.mark.parametrize("name,agent,ok,refused", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_rfc9309_outcomes(robots_dir, name, agent, ok, refused):
    r = rules(robots_dir, name, agent)
    assert allowed(r, *ok) == [True] * len(ok)
    assert allowed(r, *refused) == [False] * len(refused)
    assert r.allowed("http://domain.com/robots.txt")


@pytest.mark.parametrize(
    "name,agent,delay",
    [
        ("crawl-delay-group-merging.txt", "mybot", 10.0),
        ("crawl-delay-group-merging.txt", "otherbot", 30.0),
        ("dos-line-endings.txt", "bot1", 1.0),
        ("astore.amazon.com-robots.txt", "bot1", 5.0),
        ("twitter.com-robots.txt", "Slurp", 1.0),
        ("twitter.com-robots.txt", "msnbot", 10.0),
        ("twitter.com-robots.txt", "Googlebot", None),
    ],
)
def test_crawl_delay(robots_dir, name, agent, delay):
    assert rules(robots_dir, name, agent).crawl_delay == delay


def test_sitemaps_found_deduplicated_resolved_and_case_kept(robots_dir):
    def sitemaps(name):
        return parse_robots((robots_dir / name).read_bytes(), URL).robots.sitemaps

    assert sitemaps("sitemap-robots.txt") == [
        "http://domain.com/sitemap.xml",
        "http://domain.com/dir/my-sitemap.xml",
        "http://domain.com/dir/MixedCased-sitemap.xml",
    ]
    assert sitemaps("sitemap-robots-dedup.txt") == ["http://example.org/sitemap.xml"]
    assert sitemaps("relative-sitemap-robots.txt") == ["http://domain.com/sitemap.xml"]
    assert sitemaps("robots-with-utf16le-bom.txt") == ["http://www.newsweek.com/sitemap_index.xml"]
    assert sitemaps("format-errors-robots.txt") == ["http://domain.com/sitemap.xml"]


def test_extensions_are_read_without_rejections(robots_dir):
    for name in ("extended-standard-robots.txt", "extension-robots.txt", "extensions-group-merging.txt", "twitter.com-robots.txt"):
        assert parse_robots((robots_dir / name).read_bytes(), URL).rejections == [], name


def test_google_pattern_matching():
    def check(rule, ok, refused):
        r = parse_robots(f"User-agent: *\r\nDisallow: {rule}\r\n".encode(), URL).robots.for_agent("any")
        assert allowed(r, *ok) == [True] * len(ok), rule
        assert allowed(r, *refused) == [False] * len(refused), rule

    fish_refused = ["/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fishheads/yummy.html", "/fish.php?id=anything"]
    fish_ok = ["/Fish.asp", "/catfish", "/?id=fish", "/fis"]
    check("/fish", fish_ok, fish_refused)
    check("/fish*", fish_ok, fish_refused)
    check("/fish/", ["/fish", "/fish.html", "/Fish/Salmon.asp"], ["/fish/", "/fish/?id=anything", "/fish/salmon.htm"])
    check("/*.php", ["/", "/windows.PHP"], ["/filename.php", "/folder/filename.php", "/folder/filename.php?parameters", "/folder/any.php.file.html", "/filename.php/"])
    check("/*.php$", ["/filename.php?parameters", "/filename.php/", "/filename.php5", "/windows.PHP"], ["/filename.php", "/folder/filename.php"])
    check("/fish*.php", ["/Fish.PHP"], ["/fish.php", "/fishheads/catfish.php?parameters"])
    check("/*fish*.php", ["/fishheads/catfish.htm"], ["/fish.php", "/superfishheads/catfish.php?parameters"])
    check("/index.cfm?fuseaction=sitesearch.results*", [], ["/index.cfm?fuseaction=sitesearch.results&type=People&qry=california&pg=2"])


RFP = (
    "# /robots.txt for http://www.fict.org/\r\n# comments to webmaster@fict.org\r\n\r\n"
    "User-agent: unhipbot\r\nDisallow: /\r\n\r\n"
    "User-agent: webcrawler\r\nUser-agent: excite\r\nDisallow: \r\n\r\n"
    "User-agent: *\r\nDisallow: /org/plans.html\r\nAllow: /org/\r\nAllow: /serv\r\nAllow: /~mak\r\nDisallow: /\r\n"
)
RFP_PATHS = ["/", "/index.html", "/robots.txt", "/server.html", "/services/fast.html", "/services/slow.html",
             "/orgo.gif", "/org/about.html", "/org/plans.html", "/%7Ejim/jim.html", "/%7Emak/mak.html"]


@pytest.mark.parametrize(
    "agent,expected",
    [
        ("UnhipBot/0.1", [False, False, True, False, False, False, False, False, False, False, False]),
        ("WebCrawler/3.0", [True] * 11),
        ("Excite/1.0", [True] * 11),
        ("Unknown/1.0", [False, False, True, True, True, True, False, True, False, False, True]),
    ],
)
def test_norobots_rfc_cases(agent, expected):
    r = parse_robots(RFP.encode(), URL).robots.for_agent(agent)
    assert allowed(r, *RFP_PATHS) == expected


def test_mixed_line_endings():
    text = ("# c\r\n# c\r\nUser-agent: unhipbot\nDisallow: /\r\r\nUser-agent: webcrawler\nUser-agent: excite\r"
            "Disallow: \u0085\rUser-agent: *\r\nDisallow: /org/plans.html\nAllow: /org/\rAllow: /serv\r\nAllow: /~mak\nDisallow: /\r\n")
    assert allowed(parse_robots(text.encode(), URL).robots.for_agent("WebCrawler/3.0"), "/", "/index.html") == [True, True]
    r = parse_robots(text.encode(), URL).robots.for_agent("Unknown/1.0")
    assert allowed(r, *RFP_PATHS) == [False, False, True, True, True, True, False, True, False, False, True]


def test_html_markup_around_records():
    html = ("<!DOCTYPE HTML><HTML>\n<HEAD>\n<TITLE>/robots.txt</TITLE>\n</HEAD>\n<BODY>\n"
            "User-agent: anybot<BR>\nDisallow: <BR>\nCrawl-Delay: 10<BR>\n\nUser-agent: *<BR>\nDisallow: /<BR>\nCrawl-Delay: 30<BR>\n\n</BODY>\n</HTML>\n")
    robots = parse_robots(html.encode(), URL).robots
    assert robots.for_agent("anybot").allowed("/index.html") and robots.for_agent("anybot").crawl_delay == 10
    assert not robots.for_agent("bogusbot").allowed("/index.html") and robots.for_agent("bogusbot").crawl_delay == 30


def test_agent_lists_and_product_token():
    text = b"User-agent: One, Two, Three\r\nDisallow: /\r\n\r\nUser-agent: *\r\nAllow: /\r\n"
    robots = parse_robots(text, URL).robots
    assert [robots.for_agent(a).allowed("/fish") for a in ("One", "two", "Three", "Four")] == [False, False, False, True]
    assert product_token("focuscrawl/0.1 (+https://x.invalid/README)") == "focuscrawl"


def test_rule_before_any_group_and_bad_delay_are_rejections():
    parsed = parse_robots(b"Disallow: /x\nUser-agent: *\nCrawl-delay: soon\nthis is not a record\n", URL)
    assert [r.reason for r in parsed.rejections] == [
        "disallow rule before any user-agent line applies to no group",
        "crawl-delay 'soon' is not a non-negative number of seconds",
        "line is not a 'key: value' record",
    ]
    assert parsed.rejections[2].payload == "this is not a record"
    assert parsed.robots.for_agent("a").allowed("/x")


def test_500_kib_limit_reads_the_head_and_rejects_the_tail():
    body = b"User-agent: *\nDisallow: /a\n" + b"#" * MAX_ROBOTS_BYTES + b"\nDisallow: /b\n"
    parsed = parse_robots(body, URL)
    r = parsed.robots.for_agent("x")
    assert (r.allowed("/a"), r.allowed("/b")) == (False, True)
    assert parsed.rejections[0].reason.startswith(f"robots.txt is {len(body)} bytes")


def test_fetch_outcome_rules():
    assert ALLOW_ALL.allowed("http://h/anything") and not DISALLOW_ALL.allowed("http://h/anything")
    assert DISALLOW_ALL.allowed("http://h/robots.txt")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_never_crash(body):
    robots = parse_robots(body, URL).robots
    assert isinstance(robots.for_agent("focuscrawl").allowed("/a/b?c"), bool)


lines = st.lists(
    st.tuples(st.sampled_from(["User-agent", "Disallow", "Allow", "Crawl-delay", "Sitemap", "useragent", "x"]),
              st.text(alphabet="/*$ab%7E?.:#\u00e9 ", max_size=12)),
    max_size=20,
)


@settings(max_examples=200, deadline=None)
@given(lines, st.text(alphabet="/*$ab%7E?.\u00e9", max_size=15))
def test_structured_robots_never_crash(records, path):
    text = "\n".join(f"{k}: {v}" for k, v in records)
    rules_ = parse_robots(text, URL).robots.for_agent("a")
    assert isinstance(rules_.allowed("/" + path), bool)
