"""The web part of the world: sites with content sources, changing pages, and a content-labelled graph.

* Seed 001 (*Timely crawling of high-quality ephemeral new content*): every content source (front page, category page,
  RSS feed, Atom feed, sitemap) gains links to new pages as a Poisson process of rate λ; a new
  page published at t0 has collected ``P·(1−e^(−μ·(t−t0)))`` clicks by t, with P and μ drawn
  per source. Clicks that arrive after a page was crawled are the feedback a search engine sees.
* Seed 002 (*Look back, look around*): evergreen pages gain new outlinks (internal or
  external) as a Poisson process whose rate is page-specific but shared in part by pages of the
  same topic (content-related pages change alike), so history and neighbours both predict it.
* Seed 003 (*Fast crawling methods of exploring content distributed over large graphs*): a graph whose vertices hold content copies; vertex
  documents (``/graph/vertex/{id}.json``) list neighbours and content with its copy count (the meta
  WCE uses) and a special-copy flag (what SCE uses); ``/graph/random.json`` is the uniform vertex
  sampler UNI needs.

Built from Wikispeedia (real pages, links, topics, texts) when given, generated otherwise.
Every random quantity is a pure function of the seed; event times are extended lazily.
"""

from __future__ import annotations

import bisect
import html
import json
import math
import random
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import numpy as np

from focuscrawl.world.mess import NON_ASCII, SOFT_404, Mess

SOURCE_KINDS = ("front", "category", "rss", "atom", "sitemap")
SHOWN = 30  # links a source page shows (the newest)


@dataclass(frozen=True)
class Source:
    num: int
    host: str
    kind: str
    name: str        # category name for category pages, else the kind
    rate: float      # λ: new pages per simulated hour
    profit: float    # P: mean clicks a page collects in the end
    decay: float     # μ: per simulated hour

    @property
    def path(self) -> str:
        tail = {"front": "", "category": f"c/{quote(self.name)}", "rss": "feed.rss",
                "atom": "feed.atom", "sitemap": "sitemap.xml"}[self.kind]
        return f"/site/{self.host}/{tail}"


def _events(rng: random.Random, rate_per_s: float, start: float, until: float, times: list[float]) -> None:
    """Extend a Poisson process's event ``times`` past ``until``. The first event after ``until`` is kept
    (callers only show events up to their time), so the process is the same whatever times it is read at:
    redrawing it would add events back-dated before an earlier read."""
    t = times[-1] if times else start
    while t <= until:
        t += rng.expovariate(rate_per_s)
        times.append(t)


class Web:
    """Pages (``names``, ``topic``, ``host``, base ``links``) plus sources, change processes and graph content."""

    def __init__(self, seed: int, start_epoch: float, names: list[str], topics: list[str], links: list[list[int]],
                 texts=None) -> None:
        self.seed = seed
        self.start = start_epoch
        self.names = names
        self.topic = topics
        self.links = links
        self._texts = texts
        self.index = {n: k for k, n in enumerate(names)}
        self.hosts = sorted({self._host(t) for t in topics})
        self.pages_of_host = {h: [k for k, t in enumerate(topics) if self._host(t) == h] for h in self.hosts}
        rng = np.random.default_rng(seed + 3)
        topic_names = sorted(set(topics))
        topic_effect = dict(zip(topic_names, rng.normal(math.log(0.5), 1.0, len(topic_names))))
        # change rate per page and day: topic effect (shared by content-related pages) + own noise
        self.change_rate = [float(math.exp(topic_effect[t] + 0.5 * z)) for t, z in zip(topics, rng.normal(0, 1, len(names)))]
        self.sources: list[Source] = []
        for h in self.hosts:
            cats = sorted({t for t in (topics[k] for k in self.pages_of_host[h])})
            for kind in SOURCE_KINDS:
                for name in (cats if kind == "category" else [kind]):
                    self.sources.append(Source(len(self.sources), h, kind, name, float(rng.gamma(2.0, 1.0)),
                                               float(rng.lognormal(3.0, 1.0)), float(rng.lognormal(math.log(0.3), 0.8))))
        self.source_at = {s.path: s for s in self.sources}
        self._lock = threading.Lock()
        self._pub: dict[int, list[float]] = {}      # source -> publication times of its new pages
        self._pub_rng: dict[int, random.Random] = {}
        self._changes: dict[int, tuple[random.Random, list[float]]] = {}
        self.crawl_log: dict[str, float] = {}        # new-page path -> first crawl time (for click feedback)
        self.mess = Mess()                           # the web's mess (world/mess.py): off unless configured
        self._graph_content(seed)

    @staticmethod
    def _host(topic: str) -> str:
        return topic.split(".")[0].lower().replace("_", "-") + ".wiki.test"

    # processes --------------------------------------------------------------------------------
    def published(self, s: int, now: float) -> list[float]:
        with self._lock:
            times = self._pub.setdefault(s, [])
            rng = self._pub_rng.setdefault(s, random.Random((self.seed * 1_000_003 + 11) * 1_000_003 + s))
            _events(rng, self.sources[s].rate / 3600, self.start, now, times)
            return times[: bisect.bisect_right(times, now)]

    def changes(self, p: int, now: float) -> list[float]:
        with self._lock:
            rng, times = self._changes.setdefault(p, (random.Random((self.seed * 1_000_003 + 13) * 1_000_003 + p), []))
            _events(rng, self.change_rate[p] / 86400, self.start, now, times)
            return times[: bisect.bisect_right(times, now)]

    def added_link(self, p: int, j: int) -> str:
        """The ``j``-th outlink page ``p`` gained: mostly internal (same host), sometimes external."""
        rng = random.Random((self.seed * 1_000_003 + p) * 1_000_003 + j)
        host = self._host(self.topic[p])
        if rng.random() < 0.3:
            other = rng.randrange(len(self.names))
            return self.page_path(other)
        return self.page_path(rng.choice(self.pages_of_host[host]))

    def page_profit(self, src: Source, k: int) -> float:
        """P_i of the k-th page of ``src``: the source's P times a page's own log-normal factor (mean 1)."""
        return src.profit * random.Random((self.seed * 1_000_003 + 17) * 1_000_003 + src.num * 100_003 + k).lognormvariate(-0.125, 0.5)

    def clicks(self, src: Source, k: int, published: float, t: float) -> float:
        """Clicks page k collected by ``t``: P_i·(1−e^(−μ·Δt)), μ per hour (seed 001, section 3)."""
        return self.page_profit(src, k) * (1 - math.exp(-src.decay * max(0.0, t - published) / 3600))

    def page_path(self, p: int) -> str:
        return f"/site/{self._host(self.topic[p])}/wiki/{quote(self.names[p])}"

    def text(self, p: int) -> str:
        if self._texts is not None:
            return self._texts(self.names[p])
        rng = random.Random(self.seed * 31 + p)
        words = self.topic[p].replace(".", " ").replace("_", " ").split() + ["page", "about", "the", "and", "of"]
        return " ".join(rng.choice(words) for _ in range(80))

    # graph content (seed 003) ------------------------------------------------------------------
    def _graph_content(self, seed: int, contents: int = 5000, labels: int = 5) -> None:
        rng = np.random.default_rng(seed + 5)
        n = len(self.names)
        # heavy-tailed copy counts, as for replicated content in P2P and OSN data
        copies = np.minimum(rng.zipf(2.0, contents), min(100, n))
        self.content_copies = copies.tolist()
        self.content_label = rng.integers(0, labels, contents).tolist()
        self.content_at: dict[int, list[tuple[int, bool]]] = {}
        for c, j in enumerate(self.content_copies):
            holders = rng.choice(n, size=j, replace=False)
            for rank, v in enumerate(holders.tolist()):
                self.content_at.setdefault(v, []).append((c, rank == 0))  # one uniformly placed special copy
        self._undirected = [set(ls) for ls in self.links]
        for a, ls in enumerate(self.links):
            for b in ls:
                self._undirected[b].add(a)
        self._uni = random.Random(seed + 7)

    # serving ------------------------------------------------------------------------------------
    def crawl(self, path: str, q: dict[str, str], now: float, origin: str = "") -> tuple[int, str, bytes]:
        """Serve ``path`` at ``now``. ``origin`` (``http://host:port``, as the client addressed the
        server) makes sitemap ``<loc>``s absolute, as sitemaps.org requires; in-process callers
        without one get paths."""
        if path.startswith("/graph/"):
            return self._graph(path)
        path, headers, status = self.mess.resolve(path)
        if status is not None:  # a redirect hop
            return status, "text/plain; charset=UTF-8", b"", headers
        parts = path.split("/")  # ['', 'site', host, ...]
        host = parts[2] if len(parts) > 2 else ""
        if host not in self.pages_of_host:
            return 404, "text/html; charset=UTF-8", b"<html><body>404 no such site</body></html>"
        rest = "/".join(parts[3:])
        if rest == "calendar":
            body = self.mess.calendar_page(host, q.get("month", ""), self._names_of(host))
            if body is not None:
                return 200, "text/html; charset=UTF-8", body
        if rest == "robots.txt":
            return 200, "text/plain; charset=UTF-8", f"User-agent: *\nAllow: /\nSitemap: /site/{host}/sitemap.xml\n".encode()
        src = self.source_at.get(path) or self.source_at.get(path + "/")
        if src is not None:
            return self._source(src, now, origin)
        if rest.startswith("wiki/"):
            p = self.index.get(unquote(rest[5:]))
            if p is not None and self._host(self.topic[p]) == host:
                return self._page(p, now)
        if rest.startswith("n/"):
            found = self._new_page(host, rest[2:], now)
            if found is not None:
                return found
        if self.mess.soft404 and rest.startswith("wiki/"):
            return 200, "text/html; charset=UTF-8", SOFT_404  # a missing page answered 200 OK
        return 404, "text/html; charset=UTF-8", b"<html><body>404 not found</body></html>"

    def modified_at(self, path: str, now: float) -> float | None:
        """When what ``path`` serves last changed (its ``Last-Modified``): a page's latest outlink change,
        a source's latest new page, a new page's publication; None for what is not a web page."""
        parts = path.split("/")
        host = parts[2] if len(parts) > 2 else ""
        if not path.startswith("/site/") or host not in self.pages_of_host:
            return None
        rest = "/".join(parts[3:])
        src = self.source_at.get(path) or self.source_at.get(path + "/")
        if src is not None:
            times = self.published(src.num, now)
        elif rest.startswith("wiki/") and unquote(rest[5:]) in self.index:
            times = self.changes(self.index[unquote(rest[5:])], now)
        elif rest.startswith("n/"):
            try:
                s, k = (int(x) for x in rest[2:].split("-"))
                return self.published(s, now)[k]
            except (ValueError, IndexError):
                return None
        else:
            return self.start
        return times[-1] if times else self.start

    def _names_of(self, host: str) -> list[str]:
        return [self.names[k] for k in self.pages_of_host[host]]

    def _source(self, src: Source, now: float, origin: str = "") -> tuple[int, str, bytes]:
        times = self.published(src.num, now)
        newest = list(range(len(times) - 1, max(-1, len(times) - 1 - SHOWN), -1))
        items = [(f"/site/{src.host}/n/{src.num}-{k}", self._new_title(src, k), times[k]) for k in newest]
        if src.kind == "rss":
            body = "".join(f"<item><title>{html.escape(t)}</title><link>{u}</link><guid>{u}</guid>"
                           f"<pubDate>{_rfc822(ts)}</pubDate></item>" for u, t, ts in items)
            return 200, "application/rss+xml; charset=UTF-8", (
                f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>{src.host}</title>'
                f"<link>/site/{src.host}/</link><description>{src.host} news</description>{body}</channel></rss>").encode()
        if src.kind == "atom":
            # RFC 4287 4.2.15: the feed changed when its newest entry did (so its validators hold between)
            updated = times[-1] if times else self.start
            body = "".join(f'<entry><title>{html.escape(t)}</title><link href="{u}"/><id>{u}</id>'
                           f"<updated>{_iso(ts)}</updated></entry>" for u, t, ts in items)
            return 200, "application/atom+xml; charset=UTF-8", (
                f'<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>{src.host}</title>'
                f"<id>/site/{src.host}/feed.atom</id><updated>{_iso(updated)}</updated>{body}</feed>").encode()
        if src.kind == "sitemap":
            body = "".join(f"<url><loc>{origin}{u}</loc><lastmod>{_iso(ts)}</lastmod></url>" for u, _, ts in items)
            return 200, "application/xml; charset=UTF-8", (
                '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"{body}</urlset>").encode()
        nav = "".join(f'<li><a href="{s.path}">{html.escape(s.name)}</a></li>' for s in self.sources if s.host == src.host)
        lis = "".join(f'<li><a href="{u}">{html.escape(t)}</a> <time>{_iso(ts)}</time></li>' for u, t, ts in items)
        return 200, "text/html; charset=UTF-8", _html(f"{src.host} {src.name}", f"<nav><ul>{nav}</ul></nav><ul class=\"new\">{lis}</ul>")

    def _new_title(self, src: Source, k: int) -> str:
        rng = random.Random((self.seed * 1_000_003 + src.num) * 1_000_003 + k)
        return self.names[rng.choice(self.pages_of_host[src.host])].replace("_", " ") + f" update {k}"

    def _new_page(self, host: str, ref: str, now: float):
        try:
            s, k = (int(x) for x in ref.split("-"))
            src = self.sources[s]
        except (ValueError, IndexError):
            return None
        times = self.published(s, now)
        if src.host != host or k >= len(times):
            return None
        path = f"/site/{host}/n/{s}-{k}"
        with self._lock:
            self.crawl_log.setdefault(path, now)
        p = random.Random((self.seed * 1_000_003 + src.num) * 1_000_003 + k).choice(self.pages_of_host[host])  # as topic_of
        body = f"<p>{html.escape(self.text(p)[:1500])}</p><a href=\"{self.page_path(p)}\">{html.escape(self.names[p])}</a>"
        return 200, "text/html; charset=UTF-8", _html(self._new_title(src, k), body)

    def _page(self, p: int, now: float) -> tuple[int, str, bytes]:
        gained = self.changes(p, now)
        added = [self.added_link(p, j) for j in range(len(gained) - 1, max(-1, len(gained) - 51), -1)]
        base = [self.page_path(b) for b in self.links[p]]
        mess, title = self.mess, self.names[p].replace("_", " ")
        hrefs = [(mess.link(p, j, u), u) for j, u in enumerate(added + base)]
        if mess.on:
            host = self._host(self.topic[p])
            hrefs += [(u, u) for u in mess.extra_links(p, host, self._names_of(host), _iso(now)[:7])]
        links = "".join(f'<li><a href="{html.escape(h)}">{html.escape(unquote(u.split("?")[0].rsplit("/", 1)[1]))}</a></li>'
                        for h, u in hrefs)
        body = f"<p>{html.escape(self.text(p)[:3000])}</p><ul>{links}</ul>"
        if not mess.on:
            return 200, "text/html; charset=UTF-8", _html(title, body)
        head = f'<link rel="canonical" href="{self.page_path(p)}">' if mess.duplicates else ""
        wrong = mess.charset_is_wrong(p)
        if wrong:
            body = f"<p>{html.escape(NON_ASCII)}</p>{body}"
        # ISO-8859-1 in the header, UTF-8 in the body and its <meta charset>: the declaration is wrong
        return 200, f"text/html; charset={'ISO-8859-1' if wrong else 'UTF-8'}", _html(title, body, head)

    def _graph(self, path: str) -> tuple[int, str, bytes]:
        """The vertex contract of ``focuscrawl.graph.access.HttpGraphAccess`` (ids are strings on the wire)."""
        if path == "/graph/random.json":
            with self._lock:
                v = self._uni.randrange(len(self.names))
        else:
            ref = path[len("/graph/vertex/"):-len(".json")] if path.startswith("/graph/vertex/") and path.endswith(".json") else ""
            if not ref.isdigit() or int(ref) >= len(self.names):
                return 404, "application/json", b'{"error": 404}'
            v = int(ref)
        content = [{"content_id": str(c), "label": f"label{self.content_label[c]}", "copies": self.content_copies[c],
                    "special": special} for c, special in sorted(self.content_at.get(v, []))]
        return 200, "application/json", json.dumps(
            {"id": str(v), "neighbors": [str(n) for n in sorted(self._undirected[v])], "page": self.page_path(v),
             "content": content}, sort_keys=True).encode()

    # ground truth ---------------------------------------------------------------------------
    def topic_of(self, path: str, now: float) -> str | None:
        """The hidden topic label of the page at ``path``: the category of the real page it serves (a new
        page ``/n/{s}-{k}`` carries the text, so the topic, of one of its host's pages); None when no
        page is there. Ground truth: only :meth:`evaluate` hands it out, never a crawl response."""
        parts = path.split("/")
        if len(parts) < 5 or parts[1] != "site":
            return None
        host, kind, ref = parts[2], parts[3], unquote("/".join(parts[4:]))
        if kind == "wiki":
            p = self.index.get(ref)
            return self.topic[p] if p is not None and self._host(self.topic[p]) == host else None
        if kind == "n":
            try:
                s, k = (int(x) for x in ref.split("-"))
                src = self.sources[s]
            except (ValueError, IndexError):
                return None
            if src.host != host or k >= len(self.published(s, now)):
                return None
            return self.topic[random.Random((self.seed * 1_000_003 + src.num) * 1_000_003 + k).choice(self.pages_of_host[host])]
        return None

    def evaluate(self, path: str, q: dict[str, str], now: float):
        if path == "/truth/topics":
            # ?paths=P1,P2 -> those pages' labels; else every evergreen page's (?host=H: of one site)
            if q.get("paths"):
                return {"topics": {p: self.topic_of(p, now) for p in q["paths"].split(",")}}
            host = q.get("host")
            return {"topics": {self.page_path(p): self.topic[p] for p in range(len(self.names))
                               if host is None or self._host(self.topic[p]) == host}}
        if path == "/truth/sources":
            return {"sources": [{"path": s.path, "host": s.host, "kind": s.kind, "rate_per_hour": s.rate,
                                 "profit": s.profit, "decay_per_hour": s.decay,
                                 "published": len(self.published(s.num, now))} for s in self.sources]}
        if path == "/truth/pages":
            s = self.sources[int(q.get("source", "0"))]
            return {"source": s.path, "pages": [
                {"path": f"/site/{s.host}/n/{s.num}-{k}", "published": t, "profit": self.page_profit(s, k),
                 "clicks": self.clicks(s, k, t, now)}
                for k, t in enumerate(self.published(s.num, now))]}
        if path == "/truth/change_rates":
            host = q.get("host")
            return {"per_day": {self.page_path(p): self.change_rate[p] for p in range(len(self.names))
                                if host is None or self._host(self.topic[p]) == host}}
        if path == "/truth/graph":
            hist: dict[int, int] = {}
            for j in self.content_copies:
                hist[j] = hist.get(j, 0) + 1
            return {"vertices": len(self.names), "contents": len(self.content_copies),
                    "copies_histogram": {str(k): v for k, v in sorted(hist.items())},
                    "label_counts": {str(k): self.content_label.count(k) for k in sorted(set(self.content_label))}}
        if path == "/truth/url":  # which true page a URL of the crawl surface serves (world/mess.py)
            from urllib.parse import urlsplit

            u = urlsplit(q.get("url", ""))
            return self.mess.truth(self, u.path, u.query)
        if path == "/feedback/clicks":
            return self.feedback(float(q.get("since", "0")), now)
        return None

    def feedback(self, since: float, now: float) -> dict:
        """Clicks each crawled new page received after its crawl, between ``since`` and ``now`` (seed 001)."""
        with self._lock:
            log = sorted(self.crawl_log.items())
        rows = []
        for path, crawled in log:
            s, k = (int(x) for x in path.rsplit("/", 1)[1].split("-"))
            src, t0 = self.sources[s], self._pub[s][k]
            start = max(since, crawled)
            if now > start:
                rows.append({"path": path, "crawled_at": crawled,
                             "clicks": round(self.clicks(src, k, t0, now) - self.clicks(src, k, t0, start), 6)})
        return {"since": since, "until": now, "clicks": rows}


def _html(title: str, body: str, head: str = "") -> bytes:
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>{head}</head>"
            f"<body><h1>{html.escape(title)}</h1>{body}</body></html>").encode()


def _iso(ts: float) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _rfc822(ts: float) -> str:
    import email.utils

    return email.utils.formatdate(ts, usegmt=True)


def build_web(seed: int, start_epoch: float, data_dir: Path | None, cache_dir: Path) -> Web:
    wiki = Path(data_dir) / "wikispeedia" if data_dir is not None else None
    if wiki is not None and (wiki / "links.tsv").exists():
        return _wikispeedia(seed, start_epoch, wiki, Path(cache_dir) / "world")
    return _generated(seed, start_epoch)


def _rows(path: Path) -> list[list[str]]:
    return [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]


def _wikispeedia(seed: int, start: float, wiki: Path, cache: Path) -> Web:
    names = [unquote(r[0]) for r in _rows(wiki / "articles.tsv")]
    index = {n: k for k, n in enumerate(names)}
    topic = ["subject.Other"] * len(names)
    for a, cat in _rows(wiki / "categories.tsv"):
        k = index.get(unquote(a))
        if k is not None and topic[k] == "subject.Other":
            topic[k] = cat
    topics = [".".join(t.split(".")[1:3]) or "Other" for t in topic]
    links: list[list[int]] = [[] for _ in names]
    for a, b in _rows(wiki / "links.tsv"):
        ka, kb = index.get(unquote(a)), index.get(unquote(b))
        if ka is not None and kb is not None:
            links[ka].append(kb)
    texts_dir = cache / "wikispeedia-plaintext"
    if not (texts_dir / ".done").exists():
        with tarfile.open(wiki / "wikispeedia-plaintext.tar.xz", "r:xz") as tar:
            tar.extractall(texts_dir, filter="data")
        (texts_dir / ".done").touch()

    def text(name: str) -> str:
        f = texts_dir / "plaintext_articles" / f"{quote(name)}.txt"
        return f.read_text(encoding="utf-8", errors="replace") if f.exists() else name.replace("_", " ")

    return Web(seed, start, names, topics, links, text)


def _generated(seed: int, start: float, pages: int = 3000, topics: int = 40) -> Web:
    rng = random.Random(seed + 1)
    topic_of = [f"Topic{rng.randrange(topics) % 8}.Sub{rng.randrange(topics)}" for _ in range(pages)]
    by_topic: dict[str, list[int]] = {}
    for p, t in enumerate(topic_of):
        by_topic.setdefault(t, []).append(p)
    # links mostly within the topic, some across (like Wikipedia's), degree heavy-tailed
    links = []
    for p in range(pages):
        k = min(60, int(rng.paretovariate(1.5) * 4))
        same = by_topic[topic_of[p]]
        links.append(sorted({rng.choice(same) if rng.random() < 0.7 else rng.randrange(pages) for _ in range(k)} - {p}))
    return Web(seed, start, [f"Page_{p}" for p in range(pages)], topic_of, links)
