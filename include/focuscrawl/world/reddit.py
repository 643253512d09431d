"""Reddit's JSON wire format: ``Listing`` of ``t3`` (posts), ``t1`` (comments) and ``t5`` (communities) things.

Field names and types follow what reddit.com returns (reddit's API documentation,
https://www.reddit.com/dev/api, and its open-sourced code, github.com/reddit-archive/reddit):

- listings (``/r/{sub}/new``, ``/r/{sub}/comments``, ``/user/{name}/{submitted,comments}``) page with
  ``after`` or ``before`` (the fullname of the anchor thing: older or newer things than it), ``count``
  (the things already seen) and ``limit`` (25 by default, at most 100), and never reach deeper than 1000
  things (seed 000, section III: the crawler walks these listings). As reddit's listing builder does
  (``r2/models/builder.py``, ``QueryBuilder.get_items``, and ``r2/models/listing.py``), the answer's
  ``before`` names its first thing when ``count`` says things were seen before it, and a ``before=``
  page names its oldest thing as ``after`` when ``count`` is given. One difference: the world names an
  ``after`` only when older things exist, where reddit names one on every full page;
- ``/comments/{id}`` answers ``[post listing, comment tree]``, each comment's ``replies`` a listing of
  its answers (or ``""``);
- ``/api/info?id=`` answers a listing of the things its fullnames name (at most 100; unknown ones left out);
- a comment carries its post's ``link_id``, ``link_title``, ``link_author`` and ``link_permalink``; a
  self post's ``url`` is the absolute address of its comment page.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from focuscrawl.world.population import DELETED, Item, Population, base36

MAX_LIMIT = 100
MAX_DEPTH = 1000
MAX_INFO_IDS = 100  # reddit's /api/info takes at most 100 fullnames (``VByName(..., limit=100)``)


def parse_fullname(fullname: str | None, kind: str) -> int | None:
    if not fullname or not fullname.startswith(kind + "_"):
        return None
    try:
        return int(fullname[3:], 36)
    except ValueError:
        return None


def _slug(title: str) -> str:
    return "_".join(re.findall(r"[a-z0-9]+", title.lower())[:8]) or "post"


def subreddit_id(community: int) -> str:
    return base36(community + 1000)


def _author(pop: Population, item: Item) -> dict:
    if item.user == DELETED:
        return {"author": "[deleted]"}
    return {"author": pop.name(item.user), "author_fullname": "t2_" + base36(item.user)}


def _common(pop: Population, item: Item, now: float) -> dict:
    sub = pop.communities[item.community]
    score, _ = pop.score_at(item, now)
    return {
        "id": base36(item.num),
        **_author(pop, item),
        "subreddit": sub,
        "subreddit_name_prefixed": "r/" + sub,
        "subreddit_id": "t5_" + subreddit_id(item.community),
        "created_utc": float(item.created),
        "created": float(item.created),
        "score": score,
        "ups": score,
        "downs": 0,
        "archived": False,
        "locked": False,
        "stickied": False,
    }


def permalink(pop: Population, post: Item) -> str:
    return f"/r/{pop.communities[post.community]}/comments/{base36(post.num)}/{_slug(post.title)}/"


def t3(pop: Population, item: Item, now: float, origin: str) -> dict:
    data = _common(pop, item, now)
    sub = data["subreddit"]
    link = permalink(pop, item)
    data.update({
        "name": "t3_" + data["id"],
        "title": item.title,
        "selftext": item.text,
        "num_comments": pop.score_at(item, now)[1],
        "permalink": link,
        "url": origin + link,  # a self post's url is its own comment page, absolute
        "domain": "self." + sub,
        "is_self": True,
        "over_18": False,
        "upvote_ratio": 1.0,
    })
    return {"kind": "t3", "data": data}


def t1(pop: Population, item: Item, now: float, origin: str, post: Item | None = None) -> dict:
    data = _common(pop, item, now)
    cid = data["id"]
    post = post or pop.item(item.link_num)
    parent = item.parent_num
    link = permalink(pop, post)
    data.update({
        "name": "t1_" + cid,
        "body": item.text,
        "link_id": "t3_" + base36(post.num),
        "parent_id": ("t3_" if parent == post.num else "t1_") + base36(parent),
        "link_title": post.title,
        "link_author": _author(pop, post)["author"],
        "link_permalink": origin + link,
        "permalink": f"{link}{cid}/",
        "controversiality": 0,
    })
    return {"kind": "t1", "data": data}


def t5(pop: Population, community: int) -> dict:
    sub = pop.communities[community]
    sid = subreddit_id(community)
    return {"kind": "t5", "data": {"id": sid, "name": "t5_" + sid, "display_name": sub, "title": sub,
                                   "display_name_prefixed": "r/" + sub, "url": f"/r/{sub}/",
                                   "subreddit_type": "public", "over18": False}}


def render(pop: Population, item: Item, now: float, origin: str) -> dict:
    return t3(pop, item, now, origin) if item.kind == "t3" else t1(pop, item, now, origin)


def listing(children: list[dict], after: str | None, before: str | None = None) -> dict:
    return {"kind": "Listing", "data": {"after": after, "before": before, "children": children,
                                        "dist": len(children), "geo_filter": "", "modhash": ""}}


def clamp_limit(raw: str | None) -> int:
    try:
        return max(1, min(MAX_LIMIT, int(raw))) if raw else 25
    except ValueError:
        return 25


def _count(raw: str | None) -> int:
    try:
        return max(0, int(raw)) if raw else 0
    except ValueError:
        return 0


@dataclass(frozen=True)
class Page:
    """A listing request's paging parameters: the anchor (``after`` or ``before``), ``count`` and ``limit``."""

    after: str | None = None
    before: str | None = None
    count: int = 0
    limit: int = 25

    @classmethod
    def of(cls, q: dict[str, str]) -> "Page":
        return cls(q.get("after") or None, q.get("before") or None, _count(q.get("count")), clamp_limit(q.get("limit")))


def _slice(ids: list[int], lo: int, hi: int, page: Page, kind: str) -> tuple[list[int], bool, bool]:
    """The ids of one page of the ascending ``ids[lo:hi]``, newest first, and whether older and newer ones exist."""
    before = parse_fullname(page.before, kind) if page.after is None else None
    if before is not None:
        start = max(lo, min(hi, bisect.bisect_right(ids, before, lo, hi)))
        end = min(hi, start + page.limit)
        return ids[start:end][::-1], start > lo, end < hi
    after = parse_fullname(page.after, kind)
    end = hi if after is None else max(lo, min(hi, bisect.bisect_left(ids, after, lo, hi)))
    start = max(lo, end - page.limit)
    return ids[start:end][::-1], start > lo, end < hi


def _cursors(chosen: list[dict], older: bool, newer: bool, page: Page) -> tuple[str | None, str | None]:
    """``after`` and ``before`` of a page as reddit's listing builder gives them (module docstring)."""
    if not chosen:
        return None, None
    first, last = chosen[0]["data"]["name"], chosen[-1]["data"]["name"]
    if page.before is not None and page.after is None:
        return (last if page.count > 0 else None), (first if newer and page.count - len(chosen) > 1 else None)
    return (last if older else None), (first if page.count > 0 else None)


def stream_listing(pop: Population, nums: list[int], kind: str, now: float, page: Page, origin: str) -> dict:
    """A page of the time-ordered stream ids ``nums`` visible at ``now``, newest first (at most 1000 deep)."""
    top = pop.visible(nums, now)
    ids, older, newer = _slice(nums, max(0, top - MAX_DEPTH), top, page, kind)
    children = [render(pop, pop.item(n), now, origin) for n in ids]
    return listing(children, *_cursors(children, older, newer, page))


def user_listing(pop: Population, user: int, kind: str, now: float, page: Page, origin: str) -> dict:
    """A page of user ``user``'s things of ``kind`` created by ``now``, newest first (its newest 1000)."""
    items = pop.user_items(user, kind, now)[:MAX_DEPTH][::-1]  # oldest first, as ids grow
    by_id = {it.num: it for it in items}
    ids, older, newer = _slice([it.num for it in items], 0, len(items), page, kind)
    children = [render(pop, by_id[n], now, origin) for n in ids]
    return listing(children, *_cursors(children, older, newer, page))


def thread(pop: Population, post: Item, now: float, origin: str, focus: Item | None = None) -> list[dict]:
    """``/comments/{id}``: ``[listing of the post, listing of its comment tree]`` as seen at ``now``; with ``focus``
    (a comment's permalink) the tree starts at that comment."""
    comments = [pop.item(n) for n in pop.threads.get(post.num, [])]
    comments = [c for c in comments if c.created <= now]
    if post.user == DELETED:  # a deleted thread: the comment naming it is its only answer
        answering = pop.item(pop.comment_of_thread(post.num))
        comments = [answering] if answering is not None and answering.created <= now else []
    answers: dict[int, list[Item]] = {}
    for c in comments:
        answers.setdefault(c.parent_num, []).append(c)

    def node(c: Item, depth: int) -> dict:
        thing = t1(pop, c, now, origin, post)
        below = [node(r, depth + 1) for r in answers.get(c.num, [])]
        thing["data"].update({"depth": depth, "replies": listing(below, None) if below else ""})
        return thing

    roots = [focus] if focus is not None else answers.get(post.num, [])
    return [listing([t3(pop, post, now, origin)], None), listing([node(c, 0) for c in roots], None)]


def info(pop: Population, fullnames: list[str], now: float, origin: str) -> dict:
    """``/api/info?id=``: the things the fullnames name, in the order asked, the unknown and the unborn left out."""
    children = []
    for fullname in fullnames:
        kind = fullname[:2]
        if kind == "t5":
            k = next((c for c in range(len(pop.communities)) if fullname == "t5_" + subreddit_id(c)), None)
            if k is not None:
                children.append(t5(pop, k))
            continue
        num = parse_fullname(fullname, kind) if kind in ("t1", "t3") else None
        item = pop.item(num) if num is not None else None
        if item is not None and item.kind == kind and item.created <= now:
            children.append(render(pop, item, now, origin))
    return listing(children, None)


def search_communities(pop: Population, query: str) -> dict:
    """``/subreddits/search?q=``: the communities whose name holds ``query`` (where reddit sends an unknown one)."""
    q = query.lower()
    return listing([t5(pop, k) for k, name in enumerate(pop.communities) if q and q in name.lower()], None)
