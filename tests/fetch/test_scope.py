"""Scope and trap rules: each rule refuses with its reason, the rest is admitted, the project file validates them."""

from __future__ import annotations

import pytest

from focuscrawl.fetch.scope import REASONS, Scope, ScopeRules, date_pattern
from focuscrawl.project.loading import parse_project
from focuscrawl.project.values import ProjectError

SITE = "http://127.0.0.1:18090/site/art.wiki.test"


def refused(rules: ScopeRules, url: str, **kw) -> str | None:
    r = Scope(rules).admit(url, **kw)
    return None if r is None else r.reason


@pytest.mark.parametrize(("rules", "url", "kw", "reason"), [
    (ScopeRules(allow=("/wiki/",)), f"{SITE}/c/Art", {}, "not_allowed"),
    (ScopeRules(deny=(r"/calendar",)), f"{SITE}/calendar?month=2024-05", {}, "denied"),
    (ScopeRules(max_depth=2), f"{SITE}/wiki/A", {"depth": 3}, "too_deep"),
    (ScopeRules(max_url_length=40), f"{SITE}/wiki/A_rather_long_title", {}, "url_too_long"),
    (ScopeRules(max_query_params=2), f"{SITE}/wiki/A?a=1&b=2&c=3", {}, "too_many_params"),
    (ScopeRules(), f"{SITE}/a/b/a/b/a/b/a/b", {}, "trap_repeated_segment"),
], ids=["allow", "deny", "depth", "length", "params", "repeated-segment"])
def test_each_rule_refuses_with_its_reason(rules, url, kw, reason):
    assert refused(rules, url, **kw) == reason
    assert reason in REASONS


@pytest.mark.parametrize(("rules", "url", "kw"), [
    (ScopeRules(allow=("/wiki/",)), f"{SITE}/wiki/Art", {}),
    (ScopeRules(deny=(r"/calendar",)), f"{SITE}/wiki/Calendar_(disambiguation)", {}),
    (ScopeRules(max_depth=2), f"{SITE}/wiki/A", {"depth": 2}),
    (ScopeRules(max_query_params=2), f"{SITE}/wiki/A?a=1&b=2", {}),
    (ScopeRules(), f"{SITE}/a/b/a/b/a/b", {}),
], ids=["allow", "deny", "depth", "params", "segment-thrice"])
def test_the_rule_admits_what_is_within_it(rules, url, kw):
    assert refused(rules, url, **kw) is None


def test_the_per_host_budget_counts_admitted_pages_once_each():
    scope = Scope(ScopeRules(max_pages_per_host=2))
    assert scope.admit(f"{SITE}/wiki/A") is None
    assert scope.admit(f"{SITE}/wiki/A") is None  # the same page again is not a second page
    assert scope.admit(f"{SITE}/wiki/B") is None
    refusal = scope.admit(f"{SITE}/wiki/C")
    assert refusal.reason == "host_budget" and "max_pages_per_host 2" in refusal.detail
    assert scope.admit("http://other.test/wiki/C") is None  # another host has its own budget


def test_a_calendar_stepping_month_by_month_is_refused_after_max_date_steps():
    scope = Scope(ScopeRules(max_date_steps=12))
    months = [f"{SITE}/calendar?month={y}-{m:02d}" for y in (2024, 2025, 2026) for m in range(1, 13)]
    decisions = [scope.admit(u, parent=p) for p, u in zip([f"{SITE}/wiki/Events"] + months, months)]
    assert all(d is None for d in decisions[:13])  # the first month, then 12 steps
    assert decisions[13].reason == "trap_date_steps" and "13 links in a row" in decisions[13].detail
    # date values in path segments and split parameters step the same way
    scope = Scope(ScopeRules(max_date_steps=2))
    chain = [f"{SITE}/archive/2024/{m:02d}/" for m in range(1, 5)]
    assert [scope.admit(u, parent=p) is None for p, u in zip([SITE + "/"] + chain, chain)] == [True] * 3 + [False]
    chain = [f"{SITE}/cal?year=2024&month={m}" for m in range(1, 5)]
    assert [scope.admit(u, parent=p) is None for p, u in zip([SITE + "/"] + chain, chain)] == [True] * 3 + [False]
    # an archive page listing every month is no stepping, and other pages are not touched
    assert all(scope.admit(f"{SITE}/blog/2023/{m:02d}/", parent=f"{SITE}/blog/archive") is None for m in range(1, 13))
    assert scope.admit(f"{SITE}/wiki/2024_Summer_Olympics", parent=f"{SITE}/wiki/2020_Summer_Olympics") is None


def test_date_pattern_names_the_page_and_the_step():
    assert date_pattern(f"{SITE}/calendar?month=2024-05") == ("127.0.0.1:18090/site/art.wiki.test/calendar?month={date}",
                                                               ("2024-05",))
    assert date_pattern(f"{SITE}/wiki/Art") is None
    assert date_pattern(f"{SITE}/wiki/Page?id=12345") is None  # a number is not a date


def test_a_query_that_grows_from_link_to_link_is_a_trap():
    scope = Scope(ScopeRules(max_query_growth=3))
    parent = f"{SITE}/list?p=1"
    assert scope.admit(parent) is None
    chain = [parent]
    for i in range(5):
        child = chain[-1] + f"&x{i}=1"
        decision = scope.admit(child, parent=chain[-1])
        chain.append(child)
        if i < 3:
            assert decision is None
        else:
            assert decision.reason == "trap_growing_query"
            break
    # a sibling with another query is no growth
    assert scope.admit(f"{SITE}/list?p=2", parent=parent) is None


def test_every_refusal_goes_to_the_observer_and_becomes_a_dead_letter():
    seen = []
    scope = Scope(ScopeRules(deny=("/private/",)), on_refusal=seen.append)
    scope.admit(f"{SITE}/private/x")
    assert [r.reason for r in seen] == ["denied"]
    letter = seen[0].rejection().dead_letter("revisitor")
    assert letter.parser == "scope" and letter.url == f"{SITE}/private/x" and letter.reason.startswith("denied: ")
    assert letter.payload == f"{SITE}/private/x".encode()
    assert scope.status() == {"admitted": 0, "refused": {"denied": 1}}


def test_off_admits_every_trap():
    scope = Scope(ScopeRules.off())
    assert scope.admit(f"{SITE}/a/a/a/a/a/a/a") is None
    assert scope.admit(SITE + "/x" * 3000) is None


BASE = {"name": "p", "profile": {"query": "art"},
        "sites": [{"name": "w", "world": True, "user_agent": "bot (+mailto:a@b.example)"}]}


def project_with(scope: dict):
    raw = {**BASE, "sites": [{**BASE["sites"][0], "scope": scope}]}
    return parse_project(raw, check_files=False, check_env=False)


def test_the_project_file_carries_a_site_scope():
    project = project_with({"deny": ["/calendar"], "max_depth": 3, "max_date_steps": 2})
    assert project.site().scope == ScopeRules(deny=("/calendar",), max_depth=3, max_date_steps=2)
    assert parse_project(BASE, check_files=False, check_env=False).site().scope == ScopeRules()


@pytest.mark.parametrize(("scope", "key", "fix"), [
    ({"deny": ["/cal(endar"]}, "sites[0].scope.deny", "is not a regular expression"),
    ({"allow": "/wiki/"}, "sites[0].scope.allow", "write [\"/wiki/\"]"),
    ({"max_depth": -1}, "sites[0].scope.max_depth", "use a value >= 0"),
    ({"max_pages_per_host": 0}, "sites[0].scope.max_pages_per_host", "use a value > 0"),
    ({"max_depht": 3}, "sites[0].scope.max_depht", "did you mean 'max_depth'"),
    ({"max_url_length": "long"}, "sites[0].scope.max_url_length", "must be a whole number"),
])
def test_a_bad_scope_key_is_named_with_its_fix(scope, key, fix):
    with pytest.raises(ProjectError) as err:
        project_with(scope)
    assert err.value.key == key
    assert fix in err.value.problem


def test_the_world_project_turns_every_mess_on_and_the_world_server_gets_it(shared_data):
    from pathlib import Path

    from focuscrawl.project.loading import load_project
    from focuscrawl.world.mess import Mess, parse_mess

    project = load_project(Path(__file__).resolve().parents[2] / "projects" / "world.toml")
    mess = project.world.mess
    assert all(getattr(mess, k) for k in Mess.model_fields if k != "seed"), mess
    args = project.world.serve_args()
    assert args[0] == "--mess" and parse_mess(args[1]).model_dump() == mess.model_dump()
    assert project.site().scope.max_date_steps == 0
    clean = parse_project(BASE, check_files=False, check_env=False)
    assert clean.world.serve_args() == [] and not clean.world.mess.on


def test_a_bad_mess_knob_is_named_with_its_fix():
    with pytest.raises(ProjectError) as err:
        parse_project({**BASE, "world": {"mess": {"variants": 1.5}}}, check_files=False, check_env=False)
    assert err.value.key == "world.mess.variants" and "use a value <= 1" in err.value.problem
    with pytest.raises(ProjectError) as err:
        parse_project({**BASE, "world": {"mess": {"calender": True}}}, check_files=False, check_env=False)
    assert err.value.key == "world.mess.calender" and "did you mean 'calendar'" in err.value.problem


def test_only_a_fetch_that_failed_for_good_is_dead_lettered():
    from focuscrawl.fetch.errors import (FetchTimeoutError, HTTPStatusError, RedirectLoopError, RetriesExhaustedError,
                                         refusal_of)

    url = f"{SITE}/wiki/A"
    assert refusal_of(url, RedirectLoopError(url, "loops")).reason == "loops"
    assert refusal_of(url, HTTPStatusError(url, 404, "gone")).parser == "fetch"
    for transient in (HTTPStatusError(url, 500, "oops"), FetchTimeoutError(url, "slow"),
                      RetriesExhaustedError(url, 503, "busy"), ValueError("not the fetch layer's")):
        assert refusal_of(url, transient) is None


def test_the_revisitor_asks_the_scope_about_a_url_by_its_canonical_key():
    from focuscrawl.outlinks.revisit import PageRevisitor
    from focuscrawl.parse.canon import canonical_url

    asked = []

    class Recording(Scope):
        def admit(self, url, depth=0, parent=None):
            asked.append(url)
            return super().admit(url, depth, parent)

    revisitor = PageRevisitor(None, lambda row: None, lambda: 0.0,
                              scope=Recording(ScopeRules(deny=(r"/private/",))))
    variant = f"{SITE}/wiki/A?utm_source=x"
    assert revisitor.add([variant, f"{SITE}/wiki/A", f"{SITE}/private/B?utm_source=x"]) == 1
    assert asked == [canonical_url(variant), canonical_url(f"{SITE}/private/B")]
    assert canonical_url(variant) in revisitor.ranking and revisitor.scope.status()["refused"] == {"denied": 1}


def test_one_world_table_passes_both_validators_and_mess_to_the_world_server():
    from focuscrawl.world.mess import parse_mess

    p = parse_project({**BASE, "world": {"validators": {"enabled": True, "ignore_share": 0.2},
                                         "mess": {"gzip": True}}}, check_files=False, check_env=False)
    args = p.world.serve_args()
    assert args[0] == "--mess" and parse_mess(args[1]).gzip
    assert args[2:] == ["--validators", "--ignore-validators", "0.2", "--validators-seed", str(p.world.validators.seed)]


def test_a_restarted_revisitor_rebuilds_its_scope_without_reporting_a_refusal_twice():
    """The refusals a revisitor met before a restart were counted and dead-lettered then; the restarted one
    decides the same URLs again to rebuild its scope (the calendar's step count, the host's pages) and reports
    none of them, while a new refusal after the restart is reported as before."""
    from focuscrawl.outlinks.revisit import PageRevisitor

    def revisitor():
        reported = []
        scope = Scope(ScopeRules(max_date_steps=1, max_pages_per_host=4), on_refusal=reported.append)
        return PageRevisitor(None, lambda row: None, lambda: 0.0, discover=r"/", scope=scope), reported

    months = [f"{SITE}/calendar?month=2024-{m:02d}" for m in (1, 2, 3)]
    seen = [(f"{SITE}/wiki/Events", 0, [months[0]]), (months[0], 0, [months[1]]), (months[1], 0, [months[2]])]
    first, reported = revisitor()
    first.add([seen[0][0]])
    for page, _, links in seen:  # what the live run met: its snapshots' outlinks
        first.add(links, parent=page)
    # the step to the third month is refused, and the second month's page, which took it, is not revisited
    assert [(r.reason, r.url) for r in reported] == [("trap_date_steps", months[2]), ("trap_date_steps", months[1])]
    assert first.scope.status()["refused"] == {"trap_date_steps": 2}

    again, reported_again = revisitor()
    again.restore(seen)
    assert reported_again == [] and again.scope.status()["refused"] == {}
    # the calendar page whose step was refused is forgotten again too (not revisited), silently
    assert months[2] not in again.ranking and {u for u, _ in again.ranking.top(10)} == {seen[0][0], months[0]}
    assert months[1] in again.refused and months[1] in first.refused
    # the rebuilt state decides on: the host's fourth page is admitted, its fifth refused and reported
    assert again.add([f"{SITE}/wiki/New"], parent=seen[0][0]) == 1
    assert again.add([f"{SITE}/wiki/Newer"], parent=seen[0][0]) == 0
    assert [r.reason for r in reported_again] == ["host_budget"]


def test_a_directory_whose_urls_loop_and_none_is_a_page_is_a_trap():
    """Two URLs of one directory ended in a redirect loop: a new URL there is refused, and one admitted
    before is refused when its turn comes (recheck); a directory that also served a page is never refused."""
    reported = []
    scope = Scope(ScopeRules(max_directory_loops=2), on_refusal=reported.append)
    loops = [f"{SITE}/loop/a/wiki/{n}" for n in ("A", "B", "C", "D")]
    assert all(scope.admit(u) is None for u in loops)
    scope.fetched(loops[0], looped=True)
    assert scope.admit(f"{SITE}/loop/a/wiki/E") is None and scope.recheck(loops[2]) is None
    scope.fetched(loops[1], looped=True)
    refusal = scope.admit(f"{SITE}/loop/a/wiki/F")
    assert refusal.reason == "trap_redirect_loops" and "2 URLs of" in refusal.detail
    assert scope.recheck(loops[2]).reason == "trap_redirect_loops"
    assert [r.url for r in reported] == [f"{SITE}/loop/a/wiki/F", loops[2]]
    assert scope.status()["refused"] == {"trap_redirect_loops": 2}
    # a directory with a page in it is a site's, whatever loops it has
    scope.fetched(f"{SITE}/wiki/Page", looped=False)
    scope.fetched(f"{SITE}/wiki/X", looped=True)
    scope.fetched(f"{SITE}/wiki/Y", looped=True)
    assert scope.admit(f"{SITE}/wiki/Z") is None and "trap_redirect_loops" in REASONS


def test_the_calendar_page_whose_next_month_is_refused_is_not_revisited():
    """With max_date_steps 0 the date page is snapshotted once; its step to another month is refused and the
    page itself is forgotten (reported once), so no later period revisits it."""
    from focuscrawl.outlinks.revisit import PageRevisitor

    reported = []
    revisitor = PageRevisitor(None, lambda row: None, lambda: 0.0,
                              scope=Scope(ScopeRules(max_date_steps=0), on_refusal=reported.append),
                              on_rejection=reported.append)
    calendar = f"{SITE}/calendar?month=2024-05"
    assert revisitor.add([f"{SITE}/wiki/Events"]) == 1 and revisitor.add([calendar], parent=f"{SITE}/wiki/Events") == 1
    assert revisitor.add([f"{SITE}/calendar?month=2024-06", f"{SITE}/calendar?month=2024-04"], parent=calendar) == 0
    assert calendar not in revisitor.ranking and calendar in revisitor.refused
    assert [r.reason for r in reported] == ["trap_date_steps"] * 3 and reported[2].url == calendar
    assert revisitor.scope.status()["refused"] == {"trap_date_steps": 3}
