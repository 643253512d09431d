"""Contract tests: the world's reddit API against what reddit documents, one shape per test.

Sources: reddit's API documentation (https://www.reddit.com/dev/api: "listings", "GET [/r/subreddit]/comments/article",
"GET [/r/subreddit]/api/info", "GET [/r/subreddit]/comments"), its OAuth2 wiki
(https://github.com/reddit-archive/reddit/wiki/OAuth2), the announcement of the rate-limit headers
(r/redditdev, "Formal ratelimiting headers": the window "is currently set to 10 minutes") and reddit's
open-sourced code (github.com/reddit-archive/reddit: ``r2/models/builder.py``, ``r2/lib/ratelimit.py``,
``r2/controllers/reddit_base.py``, ``r2/controllers/oauth2.py``).
"""

from __future__ import annotations

import pytest
import requests

from focuscrawl.world.oauth import TOKEN_PATH, OAuthEmulator
from focuscrawl.world.ratelimit import REDDIT_WINDOW, RateLimiter
from focuscrawl.world.server import WorldServer
from tests.world.conftest import START, small_world

NOW = START + 1800  # the served world's clock: 30 simulated minutes after the start


@pytest.fixture(scope="module")
def api():
    with WorldServer(small_world(seed=3)) as server:
        requests.post(server.eval_url + "/clock", json={"set": NOW}, timeout=10)
        yield server


def get(server, path: str, **params) -> requests.Response:
    return requests.get(server.url + path, params=params, timeout=10, allow_redirects=False)


def data(server, path: str, **params) -> dict:
    r = get(server, path, **params)
    assert r.status_code == 200, (path, r.status_code, r.text[:200])
    return r.json()["data"]


def names(listing: dict) -> list[str]:
    return [c["data"]["name"] for c in listing["children"]]


def info(server, *fullnames: str) -> list[dict]:
    return [c["data"] for c in data(server, "/api/info.json", id=",".join(fullnames))["children"]]


def test_listing_pages_with_after_and_back_with_before_and_count(api):
    """dev/api "listings": after/before name the anchor thing, count the things already seen, limit at most 100;
    r2/models/builder.py: the answer's ``before`` names its first thing only when ``count`` > 0."""
    first = data(api, "/r/all/new.json", limit=10)
    assert first["before"] is None and len(first["children"]) == 10 and first["after"] == names(first)[-1]
    second = data(api, "/r/all/new.json", limit=10, after=first["after"], count=10)
    assert second["before"] == names(second)[0] and set(names(first)).isdisjoint(names(second))
    assert data(api, "/r/all/new.json", limit=10, after=first["after"])["before"] is None  # no count: no before
    # back from the second page's first thing: the first page again, newest first
    back = data(api, "/r/all/new.json", limit=10, before=second["before"], count=20)
    assert names(back) == names(first)
    assert back["after"] == names(first)[-1]  # with count, a before= page names its oldest thing as after
    assert data(api, "/r/all/new.json", limit=10, before=names(first)[0])["children"] == []  # nothing newer
    walked, after = [], None
    while True:
        page = data(api, "/r/all/new.json", limit=100, **({"after": after} if after else {}))
        walked += names(page)
        after = page["after"]
        if after is None:
            break
    assert len(walked) == len(set(walked)) > 100 and walked[:10] == names(first)


def test_ids_are_base36_and_grow_with_creation_time(api):
    """reddit's ids are base36 numbers given in creation order: newer things have larger ids."""
    posts = [c["data"] for c in data(api, "/r/all/new.json", limit=100)["children"]]
    comments = [c["data"] for c in data(api, "/r/all/comments.json", limit=100)["children"]]
    for things in (posts, comments):
        ids = [int(t["id"], 36) for t in things]
        assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)
        assert [t["created_utc"] for t in things] == sorted((t["created_utc"] for t in things), reverse=True)
    both = sorted(posts + comments, key=lambda t: int(t["id"], 36))
    assert [t["created_utc"] for t in both] == sorted(t["created_utc"] for t in both)
    # a user's history (made before the stream began) has smaller ids than what the user writes live
    author = posts[0]["author"]
    mine = [c["data"] for c in data(api, f"/user/{author}/submitted.json", limit=100)["children"]]
    assert [int(t["id"], 36) for t in mine] == sorted((int(t["id"], 36) for t in mine), reverse=True)
    assert all(int(c["id"], 36) > int(c["link_id"][3:], 36) for c in comments)  # a comment is younger than its post


def test_all_comments_and_a_community_s_comments_answer_posts_of_that_community(api):
    """dev/api "GET [/r/subreddit]/comments": the newest comments, /r/all's of every community; a comment lives in
    its post's community, and a comment listing carries link_title, link_author and link_permalink."""
    comments = [c["data"] for c in data(api, "/r/all/comments.json", limit=100)["children"]]
    assert comments and all(c["name"].startswith("t1_") for c in comments)
    posts = {p["name"]: p for p in info(api, *{c["link_id"] for c in comments})}
    assert set(posts) == {c["link_id"] for c in comments}
    for c in comments:
        post = posts[c["link_id"]]
        assert c["subreddit"] == post["subreddit"] and c["subreddit_id"] == post["subreddit_id"]
        assert (c["link_title"], c["link_author"]) == (post["title"], post["author"])
        assert c["link_permalink"] == api.url + post["permalink"]
        assert c["permalink"] == post["permalink"] + c["id"] + "/"
    sub = comments[0]["subreddit"]
    in_sub = [c["data"] for c in data(api, f"/r/{sub}/comments.json", limit=100)["children"]]
    assert in_sub and {c["subreddit"] for c in in_sub} == {sub}
    assert [c for c in comments if c["subreddit"] == sub] == in_sub[: len([c for c in comments if c["subreddit"] == sub])]


def test_comments_of_a_post_are_the_post_and_its_comment_tree(api):
    """dev/api "GET [/r/subreddit]/comments/article": a list of two listings, the post then its comments, each
    comment's ``replies`` a listing of its answers (or ""), parent_id naming what it answers."""
    comments = [c["data"] for c in data(api, "/r/all/comments.json", limit=100)["children"]]
    by_post: dict[str, int] = {}
    for c in comments:
        by_post[c["link_id"]] = by_post.get(c["link_id"], 0) + 1
    post = max(by_post, key=by_post.get)
    r = get(api, f"/comments/{post[3:]}.json")
    assert r.status_code == 200
    thread = r.json()
    assert isinstance(thread, list) and [t["kind"] for t in thread] == ["Listing", "Listing"]
    assert names(thread[0]["data"]) == [post]

    def walk(things, parent, depth):
        for t in things:
            assert t["kind"] == "t1" and t["data"]["parent_id"] == parent and t["data"]["depth"] == depth
            assert t["data"]["link_id"] == post
            yield t["data"]["name"]
            replies = t["data"]["replies"]
            if replies != "":
                assert replies["kind"] == "Listing" and replies["data"]["children"]
                yield from walk(replies["data"]["children"], t["data"]["name"], depth + 1)

    in_tree = list(walk(thread[1]["data"]["children"], post, 0))
    assert set(in_tree) >= {c["name"] for c in comments if c["link_id"] == post}
    # the post's permalink answers the same (reddit's comment pages live at their permalinks)
    permalink = info(api, post)[0]["permalink"]
    assert get(api, permalink + ".json").json() == thread
    # under a comment's permalink the tree starts at that comment
    focus = in_tree[-1]
    sub_thread = get(api, f"{permalink}{focus[3:]}/.json").json()
    assert names(sub_thread[1]["data"])[0] == focus
    assert get(api, "/comments/zzzzzzzzzzzz.json").status_code == 404


def test_some_comments_answer_comments(api):
    """parent_id chains: a comment answers its post (``t3_``) or another comment of the same post (``t1_``)."""
    comments = [c["data"] for c in data(api, "/r/all/comments.json", limit=100)["children"]]
    replies = [c for c in comments if c["parent_id"].startswith("t1_")]
    assert replies and len(replies) < len(comments)
    for c in replies:
        (parent,) = info(api, c["parent_id"])
        assert parent["link_id"] == c["link_id"] and parent["created_utc"] <= c["created_utc"]


def test_api_info_answers_the_things_its_fullnames_name(api):
    """dev/api "GET [/r/subreddit]/api/info": a listing of the things named by ``id`` (comma-separated fullnames,
    at most 100; r2/controllers/api.py ``VByName(..., ignore_missing=True, limit=100)``), links, comments and
    subreddits."""
    post = data(api, "/r/all/new.json", limit=1)["children"][0]["data"]
    comment = data(api, "/r/all/comments.json", limit=1)["children"][0]["data"]
    got = info(api, comment["name"], "t3_zzzzzzzzzzzz", post["name"], post["subreddit_id"])
    assert [t["name"] for t in got] == [comment["name"], post["name"], post["subreddit_id"]]
    assert got[0] == comment and got[1] == post and got[2]["display_name"] == post["subreddit"]
    assert get(api, "/api/info.json", id=",".join([post["name"]] * 101)).status_code == 400


def test_user_names_are_case_insensitive(api):
    """reddit's user pages answer a name in any letter case, and things keep the name as the user spelt it."""
    author = data(api, "/r/all/new.json", limit=1)["children"][0]["data"]["author"]
    canonical = get(api, f"/user/{author}/submitted.json").json()
    assert get(api, f"/user/{author.upper()}/submitted.json").json() == canonical
    assert {c["data"]["author"] for c in canonical["data"]["children"]} == {author}


def test_an_unknown_community_is_sent_to_the_community_search(api):
    """r2/controllers/reddit_base.py: a valid name that names no community is answered 302 to
    /subreddits/search?q=NAME (the request's extension kept); an invalid name 404."""
    r = get(api, "/r/nosuchcommunity/new.json")
    assert r.status_code == 302 and r.headers["Location"] == "/subreddits/search.json?q=nosuchcommunity"
    assert get(api, "/r/a/new.json").status_code == 404  # not a valid community name (3 to 21 characters)
    found = data(api, "/subreddits/search.json", q="depress")["children"]
    assert [(t["kind"], t["data"]["display_name"]) for t in found] == [("t5", "depression")]


def test_a_self_post_url_is_the_absolute_address_of_its_comment_page(api):
    """A self post's ``url`` is its permalink on the site, absolute (``is_self``, ``domain`` self.SUB)."""
    post = data(api, "/r/all/new.json", limit=1)["children"][0]["data"]
    assert post["is_self"] and post["domain"] == "self." + post["subreddit"]
    assert post["url"] == api.url + post["permalink"]
    thread = requests.get(post["url"], timeout=10).json()
    assert names(thread[0]["data"]) == [post["name"]]


def test_rate_limit_headers_count_down_reddit_s_600_second_window():
    """r2/lib/ratelimit.py get_timeslice: slices of 600 s start at multiples of 600 s since the epoch;
    r2/controllers/reddit_base.py: X-Ratelimit-Used counts every request of the slice (a refused one too),
    X-Ratelimit-Reset is the seconds to the slice's end, over the limit 429 with Retry-After."""
    assert REDDIT_WINDOW == 600
    clock = [1_699_999_800.0 + 523]  # 523 s into a slice (1_699_999_800 is a multiple of 600)
    limiter = RateLimiter(2, wall=lambda: clock[0])
    ok, h = limiter.hit("c")
    assert ok and (h["x-ratelimit-used"], h["x-ratelimit-remaining"], h["x-ratelimit-reset"]) == ("1", "1.0", "77")
    clock[0] += 30
    ok, h = limiter.hit("c")
    assert ok and h["x-ratelimit-reset"] == "47"
    ok, h = limiter.hit("c")
    assert not ok and (h["x-ratelimit-used"], h["x-ratelimit-remaining"], h["Retry-After"]) == ("3", "0.0", "47")
    clock[0] += 47  # the next slice
    ok, h = limiter.hit("c")
    assert ok and (h["x-ratelimit-used"], h["x-ratelimit-reset"]) == ("1", "600")
    with WorldServer(small_world(rate_limit=100)) as server:  # the world's default window
        reset = int(requests.get(server.url + "/r/all/new.json", timeout=10).headers["X-Ratelimit-Reset"])
        assert 0 < reset <= 600


def test_the_token_endpoint_answers_an_unsupported_grant_type_as_reddit_does():
    """r2/controllers/oauth2.py POST_access_token: a grant type it does not support is answered 200 with
    ``{"error": "unsupported_grant_type"}``; bad client credentials 401 (OAuth2 wiki)."""
    world = small_world()
    world.oauth = OAuthEmulator("fc-id", "fc-secret-0123456789")
    with WorldServer(world) as server:
        r = requests.post(server.url + TOKEN_PATH, data={"grant_type": "password"}, auth=("fc-id", "fc-secret-0123456789"),
                          timeout=10)
        assert (r.status_code, r.json()) == (200, {"error": "unsupported_grant_type"})
        r = requests.post(server.url + TOKEN_PATH, data={"grant_type": "client_credentials"}, auth=("fc-id", "wrong"),
                          timeout=10)
        assert r.status_code == 401
        r = requests.post(server.url + TOKEN_PATH, data={"grant_type": "client_credentials"},
                          auth=("fc-id", "fc-secret-0123456789"), timeout=10)
        assert r.status_code == 200 and r.json()["token_type"] == "bearer"
