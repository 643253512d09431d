"""The world's web as messy as the real one: each behaviour a seeded knob, off (zero) by default.

A real crawl meets the same page under many URLs, copies that point at their original with
``rel=canonical``, redirect chains and loops, "not found" pages answered ``200 OK`` (soft-404s,
Bar-Yossef et al., "Sic Transit Gloria Telae: Towards an Understanding of the Web's Decay",
WWW 2004, section 3), calendars that link to the next month forever, compressed bodies and
charsets declared wrongly. :class:`Mess` holds one knob per behaviour; the world writes its
links and answers its URLs through it, and :meth:`Mess.truth` tells the evaluation side which
true page (if any) a URL serves, so a crawl's waste is measurable. The live path never reads it.

The world serves its sites as virtual hosts (``/site/<host>/...`` of one origin), so the host
spelled in upper case and the host with its scheme's default port (``:80``) are written in that
segment, the authority of a world site.

Knobs (``[world.mess]`` of a project file, ``--mess`` of ``focuscrawl world serve``):

- ``variants``: share of a page's links written as another URL of the same page: tracking
  parameters (``utm_*``, ``fbclid``, ``gclid``), a session id (``;jsessionid=``, ``sessionid=``,
  ``PHPSESSID=``), the host in upper case, a trailing slash, an explicit default port;
- ``duplicates``: share of links to the page's copy (``/site/<host>/m/wiki/...``, a "mobile"
  copy), which, like every page when this knob is on, names its original with ``rel=canonical``;
- ``redirects``: share of links that reach the page through a chain of one to three redirects
  (301, 302, 307, 308); ``redirect_loops``: extra links per page into a two-URL redirect loop;
- ``soft404``: extra links per page to pages that do not exist, and the site answers every
  missing page with ``200 OK`` and a "not found" page;
- ``calendar``: every page links to its site's calendar (``/calendar?month=YYYY-MM``), whose
  months link to the previous and the next month without end;
- ``gzip``: HTML is sent ``Content-Encoding: gzip`` to clients that accept it;
- ``wrong_charset``: share of pages whose ``Content-Type`` says ``ISO-8859-1`` while the body
  is UTF-8 (its ``<meta charset>`` says so) with non-ASCII text.

Shares are in [0, 1]; "extra links per page" are expected counts (a page gets ``int(x)`` links
and one more with the fractional part's probability). Every draw is a pure function of
(``seed``, page, link), so two worlds with the same seed serve the same mess.
"""

from __future__ import annotations

import random
import re
import zlib
from typing import Optional
from urllib.parse import parse_qsl, quote

from focuscrawl.project.world import MessKnobs

VARIANT_KINDS = ("tracking", "session", "host_case", "trailing_slash", "default_port")
REDIRECT_CODES = (301, 302, 307, 308)
SOFT_404 = b"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Page not found</title></head>" \
           b"<body><h1>Sorry, we could not find that page</h1><p>It may have moved. Try the front page.</p></body></html>"
NON_ASCII = "Zürich, São Paulo, naïve café, Ελλάδα"
_CHAIN = re.compile(r"^go/((?:\d{3}\.)*\d{3})/(.*)$")
_LOOP = re.compile(r"^loop/([ab])/(.*)$")
_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


class Mess(MessKnobs):
    """The messy web's behaviours, driven by the ``[world.mess]`` knobs (see the module docstring)."""

    @classmethod
    def of(cls, knobs: MessKnobs | None) -> "Mess":
        """The behaviours of ``knobs`` (a project's ``[world.mess]``); off when there are none."""
        return cls() if knobs is None else cls.model_validate(knobs.model_dump())

    def _rng(self, *key: int) -> random.Random:
        r = self.seed
        for k in key:
            r = (r * 1_000_003 + k) & 0xFFFFFFFFFFFF
        return random.Random(r)

    # -- writing links ------------------------------------------------------------------------
    def link(self, page: int, j: int, path: str) -> str:
        """The href page ``page`` writes for its ``j``-th link, to the page at ``path`` (``/site/<host>/wiki/X``)."""
        rng = self._rng(1, page, j)
        draw = rng.random()
        if draw < self.variants:
            return self.variant(path, rng)
        draw -= self.variants
        if draw < self.duplicates:
            host, rest = _split(path)
            return f"/site/{host}/m/{rest}"
        draw -= self.duplicates
        if draw < self.redirects:
            host, rest = _split(path)
            codes = ".".join(str(rng.choice(REDIRECT_CODES)) for _ in range(rng.randint(1, 3)))
            return f"/site/{host}/go/{codes}/{rest}"
        return path

    def variant(self, path: str, rng: random.Random) -> str:
        kind = rng.choice(VARIANT_KINDS)
        host, rest = _split(path)
        token = f"{rng.getrandbits(64):016X}"
        if kind == "tracking":
            return path + rng.choice((f"?utm_source=world&utm_medium=link&utm_campaign=c{rng.randrange(100)}",
                                      f"?fbclid=IwAR{token}", f"?gclid={token}"))
        if kind == "session":
            return rng.choice((f"{path};jsessionid={token}", f"{path}?sessionid={token}", f"{path}?PHPSESSID={token}"))
        if kind == "host_case":
            return f"/site/{'.'.join(part.capitalize() for part in host.split('.'))}/{rest}"
        if kind == "trailing_slash":
            return path + "/"
        return f"/site/{host}:80/{rest}"

    def extra_links(self, page: int, host: str, names: list[str], month: str) -> list[str]:
        """The links a page gets besides its own: into a redirect loop, to missing pages, to the calendar."""
        rng = self._rng(2, page)
        out = []
        for _ in range(_count(rng, self.redirect_loops)):
            out.append(f"/site/{host}/loop/a/wiki/{quote(rng.choice(names))}")
        for k in range(_count(rng, self.soft404)):
            out.append(f"/site/{host}/wiki/{quote(rng.choice(names))}_(archived_{page}_{k})")
        if self.calendar:
            out.append(f"/site/{host}/calendar?month={month}")
        return out

    # -- answering ----------------------------------------------------------------------------
    def resolve(self, path: str) -> tuple[str, dict[str, str] | None, int | None]:
        """``(path to serve, headers, status)`` for a request: a variant or copy is served as its page
        (``path`` normalised, status None), a redirect hop answers its code with a ``Location``."""
        if not path.startswith("/site/"):
            return path, None, None
        host, rest = _split(path)
        if self.variants:
            host = host.lower().removesuffix(":80").removesuffix(":443")
            rest = "/".join(seg.split(";", 1)[0] for seg in rest.split("/"))
            if rest.startswith("wiki/") and rest.endswith("/"):
                rest = rest.rstrip("/")
        m = _CHAIN.match(rest) if self.redirects else None
        if m:
            codes = m.group(1).split(".")
            nxt = f"/site/{host}/go/{'.'.join(codes[1:])}/{m.group(2)}" if len(codes) > 1 else f"/site/{host}/{m.group(2)}"
            return path, {"Location": nxt}, int(codes[0])
        m = _LOOP.match(rest) if self.redirect_loops else None
        if m:
            other = "b" if m.group(1) == "a" else "a"
            return path, {"Location": f"/site/{host}/loop/{other}/{m.group(2)}"}, 302
        if self.duplicates and rest.startswith("m/wiki/"):
            rest = rest[2:]
        return f"/site/{host}/{rest}", None, None

    def calendar_page(self, host: str, month: str, names: list[str]) -> bytes | None:
        """The calendar of ``month`` (``YYYY-MM``): a few of the site's pages and the months either side."""
        m = _MONTH.match(month or "")
        if not self.calendar or not m:
            return None
        y, mo = int(m.group(1)), int(m.group(2))
        prev = f"{y - (mo == 1)}-{12 if mo == 1 else mo - 1:02d}"
        nxt = f"{y + (mo == 12)}-{1 if mo == 12 else mo + 1:02d}"
        rng = self._rng(3, y * 12 + mo)
        events = "".join(f'<li><a href="/site/{host}/wiki/{quote(n)}">{n}</a></li>' for n in rng.sample(names, min(2, len(names))))
        return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Calendar {month}</title></head><body>"
                f"<h1>Events in {month}</h1><ul>{events}</ul><a href=\"/site/{host}/calendar?month={prev}\">previous</a> "
                f"<a href=\"/site/{host}/calendar?month={nxt}\">next</a></body></html>").encode()

    def charset_is_wrong(self, page: int) -> bool:
        return self._rng(4, page).random() < self.wrong_charset

    def compress(self, body: bytes, accept_encoding: str | None, ctype: str) -> tuple[bytes, dict[str, str]]:
        """``(body, headers)``: gzipped with ``Content-Encoding`` when the knob is on and the client accepts it."""
        if not self.gzip or not ctype.startswith("text/html"):
            return body, {}
        accepted = {part.split(";")[0].strip().lower() for part in (accept_encoding or "").split(",")}
        if "gzip" not in accepted:
            return body, {"Vary": "Accept-Encoding"}
        z = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: a gzip container
        return z.compress(body) + z.flush(), {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}

    # -- the evaluation side ------------------------------------------------------------------
    def truth(self, web, path: str, query: str = "") -> dict:
        """What ``path?query`` serves: ``{"kind", "page"}``, ``page`` the true page's path (None when it
        serves none). Kinds: ``page`` (the page's own URL), ``variant``, ``duplicate``, ``redirect``
        (a chain to ``page``), ``loop``, ``soft404``, ``calendar``, ``source``, ``missing``, ``other``."""
        served, headers, status = self.resolve(path)
        if status is not None:
            if "/loop/" in path:
                return {"kind": "loop", "page": None}
            target = path
            for _ in range(10):
                target, headers, status = self.resolve(target)
                if status is None:
                    break
                target = headers["Location"]
            return {"kind": "redirect", "page": self._page_path(web, target)}
        host, rest = _split(served)
        if rest.startswith("calendar"):
            return {"kind": "calendar", "page": None}
        if web.source_at.get(served) or web.source_at.get(served + "/"):
            return {"kind": "source", "page": None}
        page = self._page_path(web, served)
        if page is None:
            missing = rest.startswith("wiki/")
            return {"kind": ("soft404" if self.soft404 else "missing") if missing else "other", "page": None}
        params = {k.lower() for k, _ in parse_qsl(query, keep_blank_values=True)}
        if served != path or params:
            kind = "duplicate" if "/m/wiki/" in path else "variant"
            return {"kind": kind, "page": page}
        return {"kind": "page", "page": page}

    @staticmethod
    def _page_path(web, path: str) -> str | None:
        from urllib.parse import unquote

        host, rest = _split(path)
        if not rest.startswith("wiki/"):
            return None
        p = web.index.get(unquote(rest[5:]))
        if p is None or web._host(web.topic[p]) != host:
            return None
        return web.page_path(p)


def _split(path: str) -> tuple[str, str]:
    """``/site/<host>/<rest>`` -> ``(host, rest)``."""
    parts = path.split("/", 3)
    return (parts[2] if len(parts) > 2 else ""), (parts[3] if len(parts) > 3 else "")


def _count(rng: random.Random, expected: float) -> int:
    whole = int(expected)
    return whole + (rng.random() < expected - whole)


def parse_mess(text: Optional[str]) -> Mess:
    """``--mess`` of the world's command line: a JSON object of knobs (``{"variants": 0.1}``)."""
    import json

    return Mess(**json.loads(text)) if text else Mess()


__all__ = ["Mess", "NON_ASCII", "REDIRECT_CODES", "SOFT_404", "VARIANT_KINDS", "parse_mess"]
