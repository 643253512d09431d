"""Reddit's JSON wire format: ``Listing`` of ``t3`` (posts) and ``t1`` (comments) things.

Field names and types follow what reddit.com returns for ``/r/{sub}/new.json``,
``/r/{sub}/comments.json`` and ``/user/{name}/{submitted,comments}.json``; listings page with
``after`` (the fullname of the last child), ``limit`` up to 100, and never reach deeper than
1000 items, as on the real site (seed 000, section III: the crawler walks these listings).
"""

from __future__ import annotations

import bisect
import re

from focuscrawl.world.population import Item, Population, base36

MAX_LIMIT = 100
MAX_DEPTH = 1000


def parse_fullname(fullname: str | None, kind: str) -> int | None:
    if not fullname or not fullname.startswith(kind + "_"):
        return None
    try:
        return int(fullname[3:], 36)
    except ValueError:
        return None


def _slug(title: str) -> str:
    return "_".join(re.findall(r"[a-z0-9]+", title.lower())[:8]) or "post"


def _common(pop: Population, item: Item, now: float) -> dict:
    sub = pop.communities[item.community]
    score, _ = pop.score_at(item, now)
    return {
        "id": base36(item.num),
        "author": pop.name(item.user),
        "author_fullname": "t2_" + base36(item.user),
        "subreddit": sub,
        "subreddit_name_prefixed": "r/" + sub,
        "subreddit_id": "t5_" + base36(item.community + 1000),
        "created_utc": float(item.created),
        "created": float(item.created),
        "score": score,
        "ups": score,
        "downs": 0,
        "archived": False,
        "locked": False,
        "stickied": False,
    }


def t3(pop: Population, item: Item, now: float) -> dict:
    data = _common(pop, item, now)
    pid = data["id"]
    sub = data["subreddit"]
    data.update({
        "name": "t3_" + pid,
        "title": item.title,
        "selftext": item.text,
        "num_comments": pop.score_at(item, now)[1],
        "permalink": f"/r/{sub}/comments/{pid}/{_slug(item.title)}/",
        "url": f"/r/{sub}/comments/{pid}/{_slug(item.title)}/",
        "domain": "self." + sub,
        "is_self": True,
        "over_18": False,
        "upvote_ratio": 1.0,
    })
    return {"kind": "t3", "data": data}


def t1(pop: Population, item: Item, now: float) -> dict:
    data = _common(pop, item, now)
    cid = data["id"]
    link = "t3_" + base36(item.link_num)
    data.update({
        "name": "t1_" + cid,
        "body": item.text,
        "link_id": link,
        "parent_id": link,
        "permalink": f"/r/{data['subreddit']}/comments/{base36(item.link_num)}/_/{cid}/",
        "controversiality": 0,
    })
    return {"kind": "t1", "data": data}


def listing(children: list[dict], after: str | None) -> dict:
    return {"kind": "Listing", "data": {"after": after, "before": None, "children": children,
                                        "dist": len(children), "geo_filter": "", "modhash": ""}}


def clamp_limit(raw: str | None) -> int:
    try:
        return max(1, min(MAX_LIMIT, int(raw))) if raw else 25
    except ValueError:
        return 25


def stream_listing(pop: Population, nums: list[int], kind: str, now: float, after: str | None, limit: int) -> dict:
    """Newest-first page of time-ordered stream items ``nums`` visible at ``now``, after the fullname ``after``."""
    top = pop.visible(nums, now)
    floor = max(0, top - MAX_DEPTH)
    start = top
    anchor = parse_fullname(after, kind)
    if anchor is not None:
        start = min(top, bisect.bisect_left(nums, anchor))
    chosen = [nums[k] for k in range(start - 1, max(floor, start - limit) - 1, -1)]
    render = t3 if kind == "t3" else t1
    children = [render(pop, pop.item(n), now) for n in chosen]
    more = chosen and start - len(chosen) > floor
    return listing(children, children[-1]["data"]["name"] if more else None)


def user_listing(pop: Population, user: int, kind: str, now: float, after: str | None, limit: int) -> dict:
    items = pop.user_items(user, kind, now)[:MAX_DEPTH]
    start = 0
    anchor = parse_fullname(after, kind)
    if anchor is not None:
        start = next((k + 1 for k, it in enumerate(items) if it.num == anchor), len(items))
    chosen = items[start:start + limit]
    render = t3 if kind == "t3" else t1
    children = [render(pop, it, now) for it in chosen]
    more = chosen and start + len(chosen) < len(items)
    return listing(children, children[-1]["data"]["name"] if more else None)
