"""Reddit-style JSON listings: ``{"kind": "Listing", "data": {"after": ..., "children": [things]}}``.

The crawlers of seed 000, *Real-time focused extraction of social media users* (section 3, real-time focused user extraction)
read posts and comments from such listings; each child "thing" becomes one record. A thing is
kept only if it carries the fields every downstream step keys on (``name``, ``id``, ``author``,
``created_utc``) with the right types; anything else is a :class:`Rejection`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from focuscrawl.parse.rejection import Rejection

PARSER = "listing"

# Where a Reddit-format site lists every community's newest posts: reddit's /r/all/new (the crawlers' and the
# FUE explorer's default front page; a project names another with [loops.fue] listing_path).
FRONT_PAGE = "/r/all/new.json"

# Thing kinds that are records: t1 comment, t2 account, t3 link/post, t4 message, t5 subreddit, t6 award.
RECORD_KINDS = frozenset({"t1", "t2", "t3", "t4", "t5", "t6"})

REQUIRED_FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "id": (str,),
    "author": (str,),
    "created_utc": (int, float),
}


@dataclass
class Parsed:
    """One listing page: its valid records, the cursor of the next page, and what was refused."""

    records: list[dict] = field(default_factory=list)
    after: str | None = None
    rejections: list[Rejection] = field(default_factory=list)


def _problem(thing: object) -> str | None:
    """Why ``thing`` is not a valid record, or None when it is."""
    if not isinstance(thing, dict):
        return f"child is a {type(thing).__name__}, not an object"
    kind = thing.get("kind")
    if not isinstance(kind, str) or kind not in RECORD_KINDS:
        return f"child kind {kind!r} is not a record kind ({', '.join(sorted(RECORD_KINDS))})"
    data = thing.get("data")
    if not isinstance(data, dict):
        return f"{kind} child has no 'data' object"
    for name, types in REQUIRED_FIELDS.items():
        if name not in data:
            return f"{kind} child lacks required field {name!r}"
        value = data[name]
        # bool is an int subclass but never a timestamp or identifier.
        if isinstance(value, bool) or not isinstance(value, types):
            wanted = " or ".join(t.__name__ for t in types)
            return f"{kind} field {name!r} is {type(value).__name__}, expected {wanted}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{kind} field {name!r} is not a finite number"
        if isinstance(value, str) and not value:
            return f"{kind} field {name!r} is empty"
    return None


def _raw(thing: object) -> str:
    try:
        return json.dumps(thing, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return repr(thing)


def parse_listing(body: bytes | str, url: str) -> Parsed:
    """Parse one listing page; never raises, every refused part is in ``.rejections``."""
    out = Parsed()

    def reject(reason: str, payload: bytes | str) -> None:
        out.rejections.append(Rejection(reason, payload, url, PARSER))

    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        reject(f"body is not valid JSON: {exc}", body)
        return out
    except TypeError as exc:
        reject(f"body is not text or bytes: {exc}", repr(body))
        return out
    data = doc.get("data") if isinstance(doc, dict) else None
    children = data.get("children") if isinstance(data, dict) else None
    if not isinstance(children, list):
        reject("not a listing: expected an object with data.children as a list", body)
        return out

    after = data.get("after")
    if after is None or isinstance(after, str):
        out.after = after or None
    else:
        reject(f"listing 'after' is a {type(after).__name__}, not a string; pagination stops here", _raw(after))

    for thing in children:
        problem = _problem(thing)
        if problem is None:
            out.records.append({**thing["data"], "kind": thing["kind"]})
        else:
            reject(problem, _raw(thing))
    return out
