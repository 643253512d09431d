"""Rewrite rules learned from a crawl's own aliases (focuscrawl.fetch.dust): a rule holds once two pages of a
site gave it, only on that site, and a page fetched as itself that a rule would rewrite retires the rule."""

from __future__ import annotations

import pytest

from focuscrawl.fetch.dust import DustRules, _cut

H = "http://127.0.0.1:9/site/h.test"


@pytest.mark.parametrize(("url", "key", "rule"), [
    (H + "/wiki/X/", H + "/wiki/X", ("/$", "$")),                        # a trailing slash
    (H + "/m/wiki/X", H + "/wiki/X", ("/m/wiki/", "/wiki/")),            # a mobile copy
    (H + "/m/wiki/Mm", H + "/wiki/Mm", ("/m/wiki/", "/wiki/")),          # cut at path boundaries, not inside names
    (H + "/a/index.html", H + "/a/", ("/index.html$", "/$")),
    (H + "/wiki/X", H + "/wiki/X/", None),                               # a rule that lengthens is never kept
    (H + "/wiki/X?a=1", H + "/wiki/X", None),                            # queries are canonical_url's business
])
def test_a_pair_gives_the_substitution_between_its_urls(url, key, rule):
    assert _cut(url, key) == rule


def test_a_rule_holds_on_its_site_once_two_pages_gave_it():
    from focuscrawl.outlinks.urls import virtual_host_domain

    rules = DustRules(virtual_host_domain())
    rules.learn(H + "/m/wiki/A", H + "/wiki/A")
    assert rules(H + "/m/wiki/B") == H + "/m/wiki/B"  # one pair is no rule yet
    rules.learn(H + "/m/wiki/A", H + "/wiki/A")  # the same pair again is no more support
    assert rules(H + "/m/wiki/B") == H + "/m/wiki/B"
    rules.learn(H + "/m/wiki/C", H + "/wiki/C")
    assert rules(H + "/m/wiki/B") == H + "/wiki/B"
    assert rules("http://127.0.0.1:9/site/other.test/m/wiki/B") == "http://127.0.0.1:9/site/other.test/m/wiki/B"
    assert rules.status() == {"rules": {"h.test": ["/m/wiki/ -> /wiki/"]}, "retired": 0}
    # a page of the site that is its own page although the rule would rewrite it: the rule is retired for good
    rules.refute(H + "/m/wiki/Own")
    assert rules(H + "/m/wiki/B") == H + "/m/wiki/B" and rules.status()["retired"] == 1
    rules.learn(H + "/m/wiki/D", H + "/wiki/D")
    rules.learn(H + "/m/wiki/E", H + "/wiki/E")
    assert rules(H + "/m/wiki/B") == H + "/m/wiki/B"
    # pairs across sites teach nothing (a redirect to another site is no spelling of a page)
    rules.learn(H + "/x/", "http://127.0.0.1:9/site/other.test/x")
    assert rules.status()["rules"] == {}


def test_the_revisitor_fetches_a_known_spelling_as_the_page_its_site_rules_make_it():
    """Pages known before a rule was learned are rewritten when their turn comes: the page is fetched once
    under its key, the spelling is an alias of it."""
    from focuscrawl.outlinks.revisit import PageRevisitor

    pages = {f"{H}/wiki/{n}": f"<html><head><link rel=canonical href='{H}/wiki/{n}'></head><body>{n} text</body></html>"
             .encode() for n in ("A", "B", "C", "D")}
    fetched = []

    class Source:
        def get(self, url):
            fetched.append(url)
            return pages[url.rstrip("/")]

    from focuscrawl.fetch.dust import DustRules
    from focuscrawl.outlinks.urls import virtual_host_domain

    rev = PageRevisitor(Source(), lambda row: None, lambda: 0.0, domain_of=virtual_host_domain(),
                        dust=DustRules(virtual_host_domain()))
    rev.add([f"{H}/wiki/A/", f"{H}/wiki/B/", f"{H}/wiki/C/", f"{H}/wiki/C", f"{H}/wiki/D"])
    rev.revisit_next()  # the first period starts with the first revisit
    while rev.due():
        rev.revisit_next()
    # A/ and B/ were fetched and declared their canonical URLs: the rule "/$ -> $" holds, so C/ is C (fetched once)
    assert fetched == [f"{H}/wiki/A/", f"{H}/wiki/B/", f"{H}/wiki/C", f"{H}/wiki/D"]
    assert rev.key(f"{H}/wiki/E/") == f"{H}/wiki/E" and rev.status()["rewrite_rules"]["rules"] == {"h.test": ["/$ -> $"]}
