"""The explorer's front-page read pages back to the posts it showed before: a burst of more new posts than one
page holds between two reads is seen whole (against the world's reddit listing, over real HTTP)."""

from __future__ import annotations

import requests

from tests.fue_stream.conftest import FakeClient, thing
from focuscrawl.fetch import AddressGuard, Fetcher, HostPoliteness
from focuscrawl.fue.pipeline import COMMUNITY_CHOOSERS, CommunityExplorer, RedditClient
from focuscrawl.world.population import base36
from focuscrawl.world.server import WorldServer
from tests.world.conftest import START, small_world


def test_a_burst_of_more_than_a_page_of_new_posts_between_two_front_page_reads_is_seen_whole():
    with WorldServer(small_world(seed=5)) as server:
        fetcher = Fetcher(user_agent="focuscrawl-test/1.0", guard=AddressGuard(["127.0.0.1"]),
                          politeness=HostPoliteness(min_delay=0.0))
        try:
            explorer = CommunityExplorer(RedditClient(fetcher, server.url), COMMUNITY_CHOOSERS.create("random"))
            explorer.discover()
            requests.post(server.eval_url + "/clock", json={"advance": 3600}, timeout=10)
            seen = {p.post_id for p in explorer.discover()}
        finally:
            fetcher.close()
        pop = server.world.population
        before, after = pop.visible(pop.posts_all, START), pop.visible(pop.posts_all, START + 3600)
        burst = {"t3_" + base36(n) for n in pop.posts_all[before:after]}
    assert len(burst) > 100  # more than the 100 posts one page of reddit's listing holds
    assert burst <= seen
    assert explorer.reads["front_page"] == 2 and explorer.front_page_pages == 1 + -(-len(burst) // 100)


def test_the_front_page_pages_back_only_until_it_meets_a_post_it_showed():
    posts = [thing("t3", i, f"u{i}", "sad") for i in range(400, 0, -1)]  # newest first
    name = [p["data"]["name"] for p in posts]
    client = FakeClient({"/r/all/new.json": posts[250:]})  # 150 posts
    explorer = CommunityExplorer(client, COMMUNITY_CHOOSERS.create("random"))
    assert len(explorer.discover()) == 100 and len(client.calls) == 1  # the first read: one page
    client.listings["/r/all/new.json"] = posts[20:]  # 230 new posts on top
    ids = [p.post_id for p in explorer.discover()]
    # pages of 100 until one holds a post the previous read showed (the third); never deeper
    assert [after for _, _, after in client.calls[1:]] == [None, name[119], name[219]]
    assert ids[:230] == name[20:250]
    client.listings["/r/all/new.json"] = posts[19:]  # one more
    assert [p.post_id for p in explorer.discover()][:1] == [name[19]] and len(client.calls) == 5
