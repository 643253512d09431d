"""The world's web answers conditional requests as a real web server does: ``ETag``, ``Last-Modified``, ``304``.

A real server sends validators with a page (RFC 9110, section 8.8: ``ETag``, an opaque tag that
changes with the representation, and ``Last-Modified``) and answers a conditional ``GET`` whose
validators still match with ``304 Not Modified`` and no body (section 15.4.5), evaluating the
preconditions in the order of section 13.2.2 (``If-None-Match`` first, ``If-Modified-Since`` only
without it); werkzeug's ``is_resource_modified`` does that evaluation here. Some servers send
validators and then ignore them, answering every request in full (dynamic pages behind frameworks
that never look at the request's preconditions); a crawler catches those only by a digest of the
body (:mod:`focuscrawl.fetch.conditional`).

:class:`ValidatorKnobs` is the world's knob (``[world.validators]`` of a project file, ``--validators``
and ``--ignore-validators`` of ``focuscrawl world serve``). Its neutral default is off: the world
serves no validators and never answers 304, as it did before the knob existed, so runs made
without it are reproduced byte for byte. ``ignore_share`` picks, by the seed, that share of the web's
hosts (at least one when the share is above zero) that send validators but ignore them.
"""

from __future__ import annotations

import email.utils
import hashlib

from werkzeug.sansio.http import is_resource_modified


def etag(body: bytes) -> str:
    """A strong entity tag of a body (RFC 9110 8.8.3): quoted, the first 16 hex digits of its SHA-1."""
    return '"' + hashlib.sha1(body).hexdigest()[:16] + '"'


def http_date(ts: float) -> str:
    return email.utils.formatdate(int(ts), usegmt=True)


def conditional_answer(request_headers, body: bytes, modified_at: float | None,
                       ignore: bool = False) -> tuple[bool, dict[str, str]]:
    """``(not_modified, headers)`` for a page about to be served with ``body``: its validators, and
    whether the request's preconditions (``request_headers``, any mapping with ``get``) say the client's
    copy is current (a 304). A host that ``ignore``s validators sends them and never answers 304."""
    headers = {"ETag": etag(body)}
    if modified_at is not None:
        headers["Last-Modified"] = http_date(modified_at)
    if ignore:
        return False, headers
    inm, ims = request_headers.get("If-None-Match"), request_headers.get("If-Modified-Since")
    if inm is None and ims is None:
        return False, headers
    modified = is_resource_modified(http_if_none_match=inm, http_if_modified_since=ims,
                                    etag=headers["ETag"].strip('"'), last_modified=headers.get("Last-Modified"))
    return not modified, headers
