"""Unit tests of the stream modules (focuscrawl.fue.pipeline) and the lock-step pieces of the experiment."""

from __future__ import annotations

import json
import time

import pytest

from conftest import OTHER, TARGET, FakeClient, thing
from focuscrawl.experiments.fue import MemoryLog, MethodPipeline, parse_duration
from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.fue import RANKING_METHODS, Post, UserChooser
from focuscrawl.fue.pipeline import (
    COMMUNITY_CHOOSERS, CommunityExplorer, History, RedditClient, ReferenceJudge, SentPosts, StatsEvent, UserExtractor,
    post_of,
)
from helpers import HttpSite


def test_post_of_reads_posts_and_comments_and_skips_deleted_authors():
    p = post_of(thing("t3", 1, "ann", "sad", "title", selftext="body", score=7, num_comments=3)["data"])
    assert (p.author, p.community, p.score, p.num_comments, p.body, p.post_id) == ("ann", "sad", 7.0, 3.0,
                                                                                  "title\nbody", "t3_1")
    c = post_of(thing("t1", 2, "bob", text="a comment")["data"])
    assert (c.text, c.title, c.num_comments) == ("a comment", "", 0.0)
    assert post_of(thing("t1", 3, "[deleted]")["data"]) is None


def test_extractor_pages_both_histories_up_to_the_cap():
    client = FakeClient({
        "/user/ann/submitted.json": [thing("t3", i, "ann") for i in range(250)],
        "/user/ann/comments.json": [thing("t1", 1000 + i, "ann") for i in range(30)],
    })
    h = UserExtractor(client, cap=1000).extract("ann")
    assert (len(h.texts), h.pages) == (280, 4)  # 100 + 100 + 50, then 30
    assert [c[2] is None for c in client.calls] == [True, False, False, True]

    capped = UserExtractor(FakeClient(client.listings), cap=150).extract("ann")
    assert (len(capped.texts), capped.pages) == (180, 3)  # 100 + 50 submitted, 30 comments


def test_extractor_handles_an_empty_history():
    h = UserExtractor(FakeClient({})).extract("ghost")
    assert (h.texts, h.pages) == ((), 2)


def test_explorer_discovers_communities_and_reads_new_posts_and_comments():
    client = FakeClient({
        "/r/all/new.json": [thing("t3", 1, "ann", "sad"), thing("t3", 2, "[deleted]", "sad")],
        "/r/sad/new.json": [thing("t3", 3, "bob", "sad")],
        "/r/sad/comments.json": [thing("t1", 4, "cid", "sad")],
    })
    explorer = CommunityExplorer(client, COMMUNITY_CHOOSERS.create("random", seed=1))
    posts = explorer.visit()
    assert explorer.communities == ["sad"]
    assert [p.author for p in posts] == ["ann", "bob", "cid"]
    assert [c[0] for c in client.calls] == ["/r/all/new.json", "/r/sad/new.json", "/r/sad/comments.json"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _explorer(client, clock=None, **kw) -> CommunityExplorer:
    return CommunityExplorer(client, COMMUNITY_CHOOSERS.create("round-robin"), clock=clock or FakeClock(), **kw)


def _ids(batches) -> list[str]:
    return [p.post_id for posts in batches for p in posts]


def test_explorer_reads_the_front_page_where_the_site_lists_it():
    """[loops.fue] listing_path over real HTTP (RedditClient on the fetch layer): a site whose every-community
    listing is not /r/all/new.json, with a query of its own."""
    def listing(*things) -> tuple[int, dict, bytes]:
        body = {"kind": "Listing", "data": {"after": None, "children": list(things)}}
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    routes = {"/robots.txt": (200, {}, b"User-agent: *\nDisallow:\n"),
              "/front/new.json?raw_json=1&limit=100": listing(thing("t3", 1, "ann", "sad")),
              "/r/sad/new.json?limit=100": listing(thing("t3", 2, "bob", "sad")),
              "/r/sad/comments.json?limit=100": listing(thing("t1", 3, "cid", "sad"))}
    with HttpSite(routes) as site:
        fetcher = Fetcher(user_agent="focuscrawl-test/1.0", guard=AddressGuard([site.host]),
                          politeness=HostPoliteness(min_delay=0.0))
        try:
            explorer = _explorer(RedditClient(fetcher, site.url), listing_path="/front/new.json?raw_json=1")
            before = time.time() * 1000
            posts = explorer.visit()
            after = time.time() * 1000
        finally:
            fetcher.close()
    assert [p.author for p in posts] == ["ann", "bob", "cid"] and explorer.communities == ["sad"]
    assert [p for p in site.paths() if p != "/robots.txt"] == [
        "/front/new.json?raw_json=1&limit=100", "/r/sad/new.json?limit=100", "/r/sad/comments.json?limit=100"]
    # Decision lineage: each post names the read that showed it and what chose that read.
    assert [(p.listing_url.removeprefix(site.url), p.chosen_by) for p in posts] == [
        ("/front/new.json?raw_json=1&limit=100", "listing_order"), ("/r/sad/new.json?limit=100", "ROUND-ROBIN"),
        ("/r/sad/comments.json?limit=100", "ROUND-ROBIN")]
    assert all(before <= p.fetched_at_ms <= after for p in posts)


def test_explorer_sends_only_posts_it_has_not_sent():
    """Listings overlap: the front page keeps its posts, and a community lists what the front page showed."""
    posts = [thing("t3", i, f"u{i}", "sad") for i in range(1, 4)]
    client = FakeClient({"/r/all/new.json": posts[:2], "/r/sad/new.json": posts,
                         "/r/sad/comments.json": [thing("t1", 9, "cid", "sad")]})
    explorer = _explorer(client)
    assert _ids(explorer.listings()) == ["t3_1", "t3_2", "t3_3", "t1_9"]
    client.listings["/r/all/new.json"] = [thing("t3", 4, "u4", "sad"), *posts[:2]]  # one new post on top
    assert _ids(explorer.listings()) == ["t3_4"]
    assert explorer.visit() == [] and len(client.calls) == 9  # every listing read, nothing new in any


def test_posts_a_caller_failed_to_send_are_offered_again():
    client = FakeClient({"/r/all/new.json": [thing("t3", 1, "ann"), thing("t3", 2, "bob")]})
    explorer = _explorer(client)
    for _ in explorer.due():
        break  # the send failed: the caller stops asking, as the stream process does on an exception
    assert _ids(explorer.listings()) == ["t3_1", "t3_2"]
    assert _ids(explorer.listings()) == []


def test_sent_posts_memory_is_bounded_and_forgets_the_oldest():
    sent = SentPosts(capacity=3)
    for post_id in ("a", "b", "c", "d", ""):
        sent.add(post_id)
    assert len(sent) == 3 and [p in sent for p in "abcd"] == [False, True, True, True]
    client = FakeClient({"/r/all/new.json": [thing("t3", i, f"u{i}") for i in range(1, 6)]})
    explorer = _explorer(client, sent=SentPosts(capacity=2))
    assert len(_ids(explorer.listings())) == 5
    # Only the two most recent are remembered: the three older ones come again (the chooser counts a
    # post id once, tests/fue/test_evidence.py).
    assert _ids(explorer.listings()) == ["t3_1", "t3_2", "t3_3"]


def test_front_page_is_read_on_its_own_period_and_communities_on_theirs():
    clock = FakeClock()
    client = FakeClient({"/r/all/new.json": [thing("t3", 1, "ann", "sad")], "/r/sad/new.json": [],
                         "/r/sad/comments.json": []})
    explorer = _explorer(client, clock, front_page_interval=0.5, visit_interval=2.0)
    reads = []
    while clock.now < 4.0:
        before = len(client.calls)
        list(explorer.due())
        reads += [(clock.now, path) for path, _, _ in client.calls[before:]]
        clock.now += explorer.until_due() or 0.1  # a read takes 0.1 s
    front = [t for t, path in reads if path == "/r/all/new.json"]
    visits = [t for t, path in reads if path == "/r/sad/new.json"]
    assert front == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]  # start to start, whatever the visits do
    assert visits == [0.0, 2.1] and len([p for _, p in reads if p == "/r/sad/comments.json"]) == 2
    assert explorer.reads == {"front_page": 8, "visits": 2}


def test_a_zero_front_page_period_does_not_starve_the_community_visits():
    clock = FakeClock()
    client = FakeClient({"/r/all/new.json": [thing("t3", 1, "ann", "sad")]})
    explorer = _explorer(client, clock, front_page_interval=0.0, visit_interval=0.0)
    for _ in range(3):
        list(explorer.due())
        assert explorer.until_due() == 0.0
    assert [c[0] for c in client.calls] == ["/r/all/new.json", "/r/sad/new.json", "/r/all/new.json",
                                            "/r/sad/comments.json", "/r/all/new.json", "/r/sad/new.json"]


def test_a_failed_read_waits_for_its_next_turn():
    class Down(FakeClient):
        def listing(self, path, **kw):
            raise ConnectionError(path)

    clock = FakeClock()
    explorer = _explorer(Down({}), clock, front_page_interval=1.0)
    with pytest.raises(ConnectionError):
        list(explorer.due())
    assert explorer.until_due() == 1.0


def test_a_restarted_explorer_resends_at_most_its_listings_and_the_chooser_counts_each_post_once():
    listings = {"/r/all/new.json": [thing("t3", i, f"u{i % 3}", "sad") for i in range(1, 7)],
                "/r/sad/new.json": [thing("t3", i, f"u{i % 3}", "sad") for i in range(1, 5)],
                "/r/sad/comments.json": [thing("t1", 10 + i, f"u{i % 3}", "sad") for i in range(3)]}
    chooser = UserChooser(RANKING_METHODS.create("HAS"))
    sent = []
    for run in range(2):  # the second explorer starts with an empty memory, as after a restart
        explorer = _explorer(FakeClient(listings))
        batch = explorer.visit()
        sent.append(len(batch))
        chooser.add_posts(batch)
    assert sent == [9, 9]  # re-sent: what its first read of each listing shows, no more
    assert {u: chooser.evidence.get(u).count for u in ("u0", "u1", "u2")} == {"u0": 3, "u1": 3, "u2": 3}


def test_community_choosers_are_registered_and_repeatable():
    assert {"RANDOM", "ROUND-ROBIN"} <= set(COMMUNITY_CHOOSERS.names())
    subs = [f"c{i}" for i in range(10)]
    r1, r2 = COMMUNITY_CHOOSERS.create("random", seed=3), COMMUNITY_CHOOSERS.create("random", seed=3)
    picks = [r1.next(subs) for _ in range(20)]
    assert picks == [r2.next(subs) for _ in range(20)] and len(set(picks)) > 5
    rr = COMMUNITY_CHOOSERS.create("round-robin")
    assert sorted(rr.next(subs) for _ in range(10)) == sorted(subs)
    assert (COMMUNITY_CHOOSERS.name_of(r1), COMMUNITY_CHOOSERS.name_of(rr)) == ("RANDOM", "ROUND-ROBIN")
    with pytest.raises(KeyError, match="no registered community chooser"):
        COMMUNITY_CHOOSERS.name_of(object())


def test_reference_judge_applies_the_0_9_threshold(toy_classifier):
    judge = ReferenceJudge(toy_classifier)
    on = judge.judge(History("ann", (" ".join(TARGET),) * 3, 2, 0.5), run_id="r", method="HCP", sim_time=60, sim_epoch=9)
    off = judge.judge(History("bob", (" ".join(OTHER),), 2, 0.1), run_id="r", method="HCP", sim_time=60, sim_epoch=9)
    assert on.relevant and on.probability > 0.9 and (on.items, on.pages, on.user) == (3, 2, "ann")
    assert not off.relevant and off.probability < 0.5
    assert StatsEvent.from_json(on.to_json()) == on
    assert History.from_json(History("x", ("a", "b"), 3, 1.0, "RND").to_json()) == History("x", ("a", "b"), 3, 1.0, "RND")


class PagesExtractor:
    """Every user's history costs ``pages`` requests."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.users: list[str] = []

    def extract(self, user: str) -> History:
        self.users.append(user)
        return History(user, (user,), self.pages, 0.0)


class ConstantJudge:
    def judge(self, history, *, run_id, method, sim_time, sim_epoch):
        return StatsEvent(run_id, method, history.user, sim_time, sim_epoch, 0.0, 1, history.pages, 0.95, True)


def _pipeline(n_users: int, pages: int) -> MethodPipeline:
    chooser = UserChooser(RANKING_METHODS.create("HAS"))
    chooser.add_posts(Post(author=f"u{i}", created_utc=0.0, score=i, post_id=f"p{i}") for i in range(n_users))
    return MethodPipeline("HAS", chooser, PagesExtractor(pages))


def test_budget_is_spent_in_requests_and_an_overdraft_is_paid_back():
    p = _pipeline(10, pages=2)
    first = p.spend(5.0, ConstantJudge(), run_id="r", sim_time=300, sim_epoch=0)
    assert [e.user for e in first] == ["u9", "u8", "u7"] and p.credit == -1.0  # 5 -> 3 -> 1 -> -1
    second = p.spend(5.0, ConstantJudge(), run_id="r", sim_time=600, sim_epoch=0)
    assert [e.user for e in second] == ["u6", "u5"] and p.credit == 0.0       # 4 -> 2 -> 0
    assert p.requests_used == 10 and len(set(p.extractor.users)) == 5


def test_idle_budget_does_not_pile_up():
    p = _pipeline(1, pages=1)
    p.spend(5.0, ConstantJudge(), run_id="r", sim_time=300, sim_epoch=0)
    p.spend(5.0, ConstantJudge(), run_id="r", sim_time=600, sim_epoch=0)
    assert p.credit == 5.0 and len(p.events) == 1


def test_pseudo_training_reorders_the_waiting_candidates(toy_classifier):
    from focuscrawl.fue.pseudo import PseudoLabelling, PseudoTrainer

    chooser = UserChooser(RANKING_METHODS.create("HCP-POS", classifier=toy_classifier))
    chooser.add_posts([Post(author="sad", created_utc=0.0, text="hopeless numb", post_id="a"),
                       Post(author="odd", created_utc=0.0, text="zebra zebra", post_id="b")])
    assert chooser.top(1)[0][0] == "sad"
    docs = [f"{OTHER[i % 8]} {OTHER[(i + 1) % 8]}" for i in range(20)] + ["zebra crying"] * 20
    trainer = PseudoTrainer(docs, [0] * 20 + [1] * 20, PseudoLabelling(0.9, None), {"min_df": 1, "stop_words": None})
    trainer.add("zebra zebra zebra", 0.99)
    p = MethodPipeline("HCP-POS", chooser, PagesExtractor(1), trainer)
    assert p.pseudo_train(top_n=10) == 2
    assert chooser.top(1)[0][0] == "odd"   # the new model knows the pseudo-labelled word
    assert p.pseudo_train(top_n=10) == 0   # nothing new: no retraining


def test_memory_log_keeps_one_position_per_group():
    log = MemoryLog("run7")
    log.produce("t", "a", b"1")
    log.produce("t", "b", b"2")
    first = log.consume("t", "g1")
    assert [r.offset for r in first] == [0, 1]
    # The lineage names the run's log, never the live topic whose sink lands into the same table.
    assert {r.topic for r in first} == {"t.run7"}
    log.produce("t", "c", b"3")
    assert [(r.offset, r.key, r.value) for r in log.consume("t", "g1")] == [(2, b"c", b"3")]
    assert len(log.consume("t", "g2")) == 3 and log.consume("t", "g2") == []


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("30m", 1800), ("6h", 21600), ("7d", 604800), ("15", 15)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds
