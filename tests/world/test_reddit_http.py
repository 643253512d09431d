"""The crawl surface speaks Reddit's JSON: listings, things, cursors, limits, robots, rate limits."""

from __future__ import annotations

import requests

from tests.world.conftest import START, small_world
from focuscrawl.world.population import base36
from focuscrawl.world.server import WorldServer

T3_FIELDS = {"author": str, "subreddit": str, "created_utc": float, "score": int, "num_comments": int,
             "title": str, "selftext": str, "name": str, "id": str, "permalink": str}
T1_FIELDS = {"author": str, "subreddit": str, "created_utc": float, "score": int, "body": str,
             "name": str, "id": str, "link_id": str, "permalink": str}


def _walk(url: str, limit: int = 100) -> list[dict]:
    children, after, pages = [], None, 0
    while True:
        r = requests.get(url, params={"limit": limit, **({"after": after} if after else {})}, timeout=10)
        r.raise_for_status()
        data = r.json()["data"]
        children += data["children"]
        pages += 1
        after = data["after"]
        if after is None:
            return children
        assert pages < 50


def test_all_new_paginates_whole_listing_newest_first(served):
    items = _walk(served.url + "/r/all/new.json", limit=37)
    names = [c["data"]["name"] for c in items]
    assert len(names) == len(set(names)) > 100  # 30 simulated minutes at 20 events/min, ~30% posts
    times = [c["data"]["created_utc"] for c in items]
    assert times == sorted(times, reverse=True)
    assert max(times) <= START
    assert all(c["kind"] == "t3" for c in items)
    # the same listing in pages of 100 gives the same items
    assert [c["data"]["name"] for c in _walk(served.url + "/r/all/new.json", 100)] == names


def test_field_names_and_types(served):
    post = requests.get(served.url + "/r/all/new.json", params={"limit": 1}, timeout=10).json()
    assert post["kind"] == "Listing" and post["data"]["dist"] == 1
    data = post["data"]["children"][0]["data"]
    for field, typ in T3_FIELDS.items():
        assert isinstance(data[field], typ), field
    assert data["name"] == "t3_" + data["id"]
    sub = data["subreddit"]
    comments = requests.get(f"{served.url}/r/{sub}/comments.json", timeout=10).json()["data"]["children"]
    subs_with_comments = comments or requests.get(served.url + "/r/AskReddit/comments.json", timeout=10).json()["data"]["children"]
    c = subs_with_comments[0]
    assert c["kind"] == "t1"
    for field, typ in T1_FIELDS.items():
        assert isinstance(c["data"][field], typ), field
    assert c["data"]["link_id"].startswith("t3_")


def test_limit_is_capped_at_100(served):
    data = requests.get(served.url + "/r/all/new.json", params={"limit": 500}, timeout=10).json()["data"]
    assert data["dist"] == 100


def test_user_pages_and_history_cap(served):
    world = served.world
    pop = world.population
    # the most active user has thousands of comments; the listing stops at 1000, as on Reddit
    heavy = max(range(pop.config.users), key=lambda i: pop.activity[i])
    name = pop.name(heavy)
    held = pop.user_items(heavy, "t1", world.now())
    assert len(held) > 1000
    comments = _walk(f"{served.url}/user/{name}/comments.json")
    assert len(comments) == 1000
    assert [c["data"]["name"] for c in comments] == ["t1_" + base36(it.num) for it in held[:1000]]
    posts = _walk(f"{served.url}/user/{name}/submitted.json")
    assert {c["data"]["author"] for c in comments + posts} == {name}
    assert {c["kind"] for c in posts} == {"t3"} and 0 < len(posts) <= 1000
    times = [c["data"]["created_utc"] for c in comments]
    assert times == sorted(times, reverse=True)
    assert requests.get(served.url + "/user/nobody_here_3/submitted.json", timeout=10).status_code == 404


def test_robots_txt(served):
    r = requests.get(served.url + "/robots.txt", timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain")
    assert "User-agent: *" in r.text and "Disallow: /login" in r.text


def test_rate_limit_429_with_retry_after():
    with WorldServer(small_world(rate_limit=5, rate_window=60)) as server:
        s = requests.Session()
        answers = [s.get(server.url + "/r/all/new.json", timeout=10) for _ in range(7)]
        assert [a.status_code for a in answers] == [200] * 5 + [429] * 2
        assert answers[0].headers["x-ratelimit-used"] == "1"
        assert answers[4].headers["x-ratelimit-remaining"] == "0.0"
        assert 1 <= int(answers[5].headers["Retry-After"]) <= 60
        assert int(answers[5].headers["x-ratelimit-reset"]) == int(answers[5].headers["Retry-After"])
        # another client has its own budget
        other = requests.get(server.url + "/r/all/new.json", headers={"X-Client-Id": "other"}, timeout=10)
        assert other.status_code == 200


def test_same_seed_same_time_byte_identical_and_time_moves_listings():
    paths = ["/r/all/new.json?limit=100", "/r/depression/new.json", "/r/AskReddit/comments.json?limit=50"]
    bodies = []
    for _ in range(2):
        with WorldServer(small_world(seed=11)) as server:
            requests.post(server.eval_url + "/clock", json={"set": START + 900}, timeout=10)
            name = requests.get(server.url + "/r/all/new.json", timeout=10).json()["data"]["children"][0]["data"]["author"]
            # absolute URLs (a self post's url, a comment's link_permalink) name the world's own address
            bodies.append([requests.get(server.url + p, timeout=10).content.replace(server.url.encode(), b"ORIGIN")
                           for p in paths + [f"/user/{name}/submitted.json"]])
    assert bodies[0] == bodies[1]
    with WorldServer(small_world(seed=12)) as server:
        requests.post(server.eval_url + "/clock", json={"set": START + 900}, timeout=10)
        assert requests.get(server.url + paths[0], timeout=10).content != bodies[0][0]


def test_ground_truth_absent_from_crawl_port(served):
    name = requests.get(served.url + "/r/all/new.json", timeout=10).json()["data"]["children"][0]["data"]["author"]
    for path in ["/time", "/truth/population", f"/truth/users?names={name}", "/faults", "/truth/labels"]:
        assert requests.get(served.url + path, timeout=10).status_code == 404
    truth = requests.get(served.eval_url + f"/truth/users?names={name}", timeout=10).json()
    assert truth["labels"][name] in (0, 1)
    assert requests.get(served.eval_url + "/time", timeout=10).json()["sim_now"] == START
    body = requests.get(served.url + "/r/all/new.json?limit=100", timeout=10).text
    assert "label" not in body and "sim_now" not in body


def test_base_rate_and_target_rich_communities(served):
    pop = served.world.population
    assert int(pop.labels.sum()) == 250  # 5% of 5000, exactly
    truth = requests.get(served.eval_url + "/truth/population", timeout=10).json()
    assert truth["positives"] == 250 and "depression" in truth["target_rich"]
