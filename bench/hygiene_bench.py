"""Crawl hygiene on the messy world: wasted fetches, bytes per useful page and 304s, the crawler's hygiene off and on.

    python bench/hygiene_bench.py [--budget 1500] [--periods 2] [--data DIR|none] [--seed 0] [--draft]
    python bench/hygiene_bench.py --live [--budget 2000] [--max-seconds 900] [--draft]

What runs: the world in this process (``focuscrawl.world.build_world``, its web's mess as
``projects/world.toml``'s ``[world.mess]`` says: every behaviour on, and its ``[world.validators]``:
``ETag``/``Last-Modified`` and 304s, a tenth of the hosts ignoring them) served over real HTTP
(``WorldServer``), and the revisitor as ``streaming/revisitor.py`` wires it against it:
:class:`PageRevisitor` (``focuscrawl.outlinks.revisit``) fetching through the fetch layer (``Fetcher``:
robots.txt, redirects hop by hop, gzip), discovering every outlink of the world's sites (``--discover``),
pages keyed by the project site's canonical key with the world's virtual host segment canonicalised
(``focuscrawl.parse.canon``). "after" adds the crawler's hygiene: the site's scope and trap rules
(``[sites.scope]``, :mod:`focuscrawl.fetch.scope`), the soft-404 probe, conditional revisits
(:mod:`focuscrawl.fetch.conditional`, redirects to a page already fetched in the period not followed) and
rewrite rules learned from the crawl's aliases (:mod:`focuscrawl.fetch.dust`); "before" has none of them
(canonical keys are not a switch: every link is parsed as its key). Not run: Kafka, Delta, Airflow (the
snapshot rows are kept in memory; the full platform would add nothing to what is fetched). Each run gets
a fresh world of the same seed and the same budget of HTTP requests (redirect hops, robots.txt and
soft-404 probes count; the revisit that crosses the budget is the last, with all its requests), spent
over ``--periods`` revisit periods (the world's clock moves a day between two, so some pages change).

Every request is classified once, on the evaluation side, by the world's truth (``Mess.truth``: which
true page a URL serves), never on the crawl path. Wasted: the page fetched again under another URL in
the same period (``same_page_same_url`` counts those whose URL had answered it already in the period: a
redirect's end reached again from another link, or live, the other loop fetching it), a trap page (the
calendar), a redirect-loop hop, a soft-404 taken for content (a snapshot was emitted for it; one the
crawler refused, and its probe of the directory, are not), and an unchanged page's (or content source's)
revisit paid in full although its last answer offered a validator that the request did not send (a server
that ignores a validator it was sent is counted apart, ``validator_ignored_by_server``).
Useful: a true page's first fetch in a period (a 304 included). Bytes are the bodies' wire bytes
(``Content-Length``, gzipped where the world gzips), redirect and robots.txt answers included;
``revisit_bytes_saved_share`` is one minus what the revisits of unchanged pages cost over what their last
full answers cost. ``--draft`` allows writing ``bench/results/hygiene.json`` from a tree with uncommitted changes
(refused otherwise: a published result names a commit anyone can check out; under ``python -m bench``
the runner refuses for it). Draws ``hygiene.png`` beside
the result.

``--live`` runs the platform instead, as ``focuscrawl up`` starts it (:class:`focuscrawl.platform.Platform`):
Kafka, the world (the project's ``[world]`` knobs), the source crawler and the revisitor as supervised stream
processes, their Delta landings. The project is ``--project`` with its web crawlers only (the reddit and
graph loops off, no Airflow: neither spends a web fetch; no page relevance model: it only scores what is
fetched), "after" as shipped, "before" with no ``[sites.scope]`` and ``conditional_fetches = false``;
the rewrite rules have no switch and are on in both. Each run starts the ``FOCUSCRAWL_VAR``
``<var>/bench-hygiene-live/`` afresh (the world's clock, Kafka and lake; the world's build cache is kept)
and stops once the world has served
``--budget`` requests to the project's User-Agent under ``/site/`` and ``/robots.txt``; the world's access
log (its evaluation port) is the record, and its ``/truth/url`` the truth. A request's period is the
revisit period its simulated arrival time falls in (the revisitor's: the project's ``revisit_period``
from time 0, on the world's clock at 60x: 30 minutes are 30 wall seconds). A soft-404 is taken for content
when the revisitor landed it in that period or the source crawler landed it at all; refusals are counted
from the ``dead_letter`` table; the click log the sources loop reads is counted apart (``not_web``).

Writes ``bench/results/hygiene.json`` (``--live``: ``bench/results/hygiene-live.json``).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from result_json import write_result

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = Path(__file__).resolve().parent / "results" / "hygiene.json"  # the committed run the docs quote
PUBLISHED_LIVE = PUBLISHED.with_name("hygiene-live.json")  # and the committed run of --live
WASTE = ("same_page_other_url", "trap_page", "redirect_loop", "soft404_as_content", "unchanged_body_with_validator")


def run(label: str, hygiene: bool, args, data, project) -> dict:
    """One crawl of a fresh world: the revisitor as ``streaming/revisitor.py`` wires it, with the project's
    hygiene (``hygiene``: scope and trap rules, soft-404 probe, conditional revisits) or without it."""
    from focuscrawl.config import settings
    from focuscrawl.fetch import Fetcher, HostPoliteness
    from focuscrawl.fetch.conditional import Revalidator
    from focuscrawl.fetch.dust import DustRules
    from focuscrawl.fetch.guard import AddressGuard
    from focuscrawl.fetch.scope import Scope, ScopeRules
    from focuscrawl.outlinks.revisit import PageRevisitor
    from focuscrawl.outlinks.urls import virtual_host_domain
    from focuscrawl.parse.canon import virtual_host_key
    from focuscrawl.world import build_world
    from focuscrawl.world.mess import Mess
    from focuscrawl.world.server import WorldServer

    cfg = settings()
    mess = Mess.of(project.world.mess)
    world = build_world(args.seed, data_dir=data, cache_dir=cfg.var_dir, users=1000, paused=True, rate_limit=0,
                        mess=mess)
    world.validators = project.world.validators
    web = world.web
    site = project.site()
    rules = site.scope if hygiene else ScopeRules.off()
    requests_seen: list[dict] = []
    period_now = [0.0]

    def on_response(response, *a, **kw):  # every HTTP answer the crawler gets: redirect hops and robots.txt too
        parts = urlsplit(response.url)
        sent = response.request.headers
        requests_seen.append({"path": parts.path, "query": parts.query, "status": response.status_code,
                              "period": int(period_now[0]),
                              "bytes": int(response.headers.get("Content-Length") or 0),
                              "validator": bool(response.headers.get("ETag") or response.headers.get("Last-Modified")),
                              "conditional": bool(sent.get("If-None-Match") or sent.get("If-Modified-Since"))})
        return response

    with WorldServer(world) as server:
        fetcher = Fetcher("focuscrawl-bench (+mailto:bench@focuscrawl.invalid)",
                          guard=AddressGuard([server.url.split("//")[1]]), politeness=HostPoliteness(min_delay=0.0))
        fetcher.session.hooks["response"].append(on_response)

        class Source:  # the fetch layer, with the bench's look at each final answer's body (evaluation side)
            def get(self, url, accept=None):
                return self.fetch(url, accept).body

            def fetch(self, url, accept=None, validators=None, **kw):
                result = fetcher.fetch(url, accept=accept, validators=validators, **kw)
                if result.status == 200:
                    requests_seen[-1]["digest"] = hashlib.sha1(result.body).hexdigest()
                return result

        rows: list[dict] = []
        refusals, after_fetch = Counter(), Counter()
        scope = Scope(rules, on_refusal=lambda r: refusals.update([r.reason]), host_of=virtual_host_domain())
        source = Source()
        soft404 = revalidator = None
        if hygiene:
            revalidator = Revalidator(source)
        if rules.detect_soft404:
            from focuscrawl.fetch.soft404 import Soft404Probe
            from focuscrawl.outlinks.revisit import page_content

            soft404 = Soft404Probe(source.get, lambda body, url: page_content(body, url)[0])
        revisitor = PageRevisitor(source, rows.append, lambda: period_now[0], origin=0.0, interval=1.0,
                                  domain_of=virtual_host_domain(), discover=args.discover, max_pages=10**7,
                                  key_of=virtual_host_key("/site/", site.canonical), revalidator=revalidator,
                                  scope=scope, soft404=soft404, dust=DustRules(virtual_host_domain()) if hygiene else None,
                                  on_rejection=lambda r: after_fetch.update([r.parser]))
        revisitor.add([server.url + s for s in args.seed_path])
        started = time.perf_counter()
        for period in range(args.periods):
            period_now[0] = float(period)
            if period:
                world.clock.advance(86400)  # a day on the world's clock: some pages gained links
            limit = args.budget * (period + 1) // args.periods
            revisitor.revisit_next()
            while revisitor.due() and len(requests_seen) < limit:
                revisitor.revisit_next()
        seconds = time.perf_counter() - started
        fetcher.close()
    landed = {(r["period"], urlsplit(r["url"]).path, urlsplit(r["url"]).query) for r in rows}
    result = classify(requests_seen, landed, lambda path, query: mess.truth(web, path, query))
    result = {"label": label, "hygiene": hygiene, "scope": rules.model_dump(mode="json"),
              "seconds": round(seconds, 2),
              "requests_per_s": round(result["requests"] / seconds, 1) if seconds else None, **result,
              "scope_refused": dict(sorted(refusals.items())), "refused_after_fetch": dict(sorted(after_fetch.items())),
              "soft404_probes": soft404.probes if soft404 is not None else 0,
              "rewrite_rules": revisitor.dust.status() if revisitor.dust is not None else None,
              "revisit_outcomes": revalidator.status()["revisit_outcomes"] if revalidator is not None else None,
              "known_pages": len(revisitor.ranking), "snapshots": len(rows), "fetch_failures": revisitor.failures}
    print(f"{label:6s} {result['requests']} requests: wasted {result['wasted']} ({result['wasted_share']:.1%}) "
          f"{result['waste']}; {result['useful_pages']} useful pages, {result['bytes_per_useful_page']} bytes each; "
          f"304s {result['http_304']}; unchanged pages' revisit bytes saved {result['revisit_bytes_saved_share']}; "
          f"scope refused {dict(refusals)}, after the fetch {dict(after_fetch)}")
    return result


def live_project(source: Path, hygiene: bool, label: str):
    """The project of one live run: ``source`` (``projects/world.toml``) with its web crawlers only, and, for
    "before", the site's hygiene off as far as a project file switches it."""
    import tomllib

    from focuscrawl.project.loading import parse_project

    raw = tomllib.loads(source.read_text())
    raw["name"] = f"hygiene-live-{label}"
    # The budget is the web's: the reddit (FUE) and graph loops fetch none of it, and would only compete for
    # the two cores. The page relevance model only scores what is fetched (no sources loop here follows it,
    # feedback is the click log): without it nothing is fetched before the crawlers start.
    for loop in ("fue", "graph"):
        raw["loops"][loop]["enabled"] = False
    raw["profile"].pop("pages", None)
    if not hygiene:
        site = raw["sites"][0]
        # No [sites.scope]: the product's defaults (no trap rules, no soft-404 probe; a TOML file cannot say
        # "no limit", so max_url_length 2048 and max_segment_repeats 3 stay: the result's "refused" shows
        # what they refused), and unconditional revisits and recrawls. The rewrite rules (fetch/dust.py) have no switch: on in both.
        site.pop("scope", None)
        site["conditional_fetches"] = False
    return parse_project(raw, source)


def run_live(label: str, hygiene: bool, args) -> dict:
    """One run of the live platform (``focuscrawl up`` of :func:`live_project`, Kafka and the world; no
    Airflow: no DAG spends a fetch) from a fresh world clock, Kafka and lake,
    until the world has served ``--budget`` web requests to the project's crawlers (its access log: the
    evaluation side's record), classified like the in-process runs."""
    import shutil

    import requests

    from focuscrawl.config import settings
    from focuscrawl.core.status_file import read_status
    from focuscrawl.lake import open_table
    from focuscrawl.platform import Platform
    from focuscrawl.services.manager import ServiceManager

    var = args.live_var
    # A run starts from nothing (the world's clock, Kafka's log, the lake) but the world's build cache under
    # world/ (the corpus and pages it parses from the data folder, a function of seed and data alone): built
    # afresh, it kept the world from answering within its start timeout on a loaded machine.
    for part in var.glob("*"):
        if part.name != "world":
            shutil.rmtree(part) if part.is_dir() else part.unlink()
    (var / "world" / "clock.json").unlink(missing_ok=True)
    os.environ["FOCUSCRAWL_VAR"] = str(var)  # the platform's processes read their settings from the environment
    cfg = settings()
    project = live_project(args.project, hygiene, label)
    site = project.site(project.loops.revisits.site)
    period_s = project.loops.revisits.revisit_seconds
    crawlers = f"|{site.user_agent}"  # the access log's client: address|User-Agent (the world's readiness probe has another)
    entries, since, outside = [], 0, Counter()
    platform = Platform(project, cfg, project_file=args.project, services=["kafka", "world"], keep_services=True)
    try:
        try:
            platform.start()
            started = time.monotonic()
            while len(entries) < args.budget and time.monotonic() - started < args.max_seconds:
                time.sleep(2.0)
                page = requests.get(f"{cfg.world_eval_url}/access_log", params={"since": since}, timeout=30).json()
                since = page["next"]
                for e in page["entries"]:
                    path = urlsplit(e["path"]).path
                    if not e["client"].endswith(crawlers):
                        outside["other_clients"] += 1
                    elif path.startswith("/site/") or path == "/robots.txt":
                        entries.append(e)
                    else:  # the click log the sources loop reads (its feedback), not the web
                        outside[path] += 1
            seconds = time.monotonic() - started
            status = {p.stem: read_status(p) for p in sorted((Path(cfg.var_dir) / "status").glob("*.json"))
                      if p.stem in ("revisitor", "source-crawler")}
        finally:
            platform.stop()  # crawlers first, the landings last: what was fetched is in Delta
        served = entries[:args.budget]
        urls = sorted({urlsplit(e["path"])[2:4] for e in served})
        truths = {u: requests.get(f"{cfg.world_eval_url}/truth/url", timeout=30,
                                  params={"url": u[0] + ("?" + u[1] if u[1] else "")}).json() for u in urls}
    finally:
        ServiceManager(cfg).down(log=lambda *a: None)
    requests_seen = [{"path": urlsplit(e["path"]).path, "query": urlsplit(e["path"]).query, "status": e["status"],
                      "period": int(e["clock"] // period_s), "bytes": e["bytes"], "validator": e["validator"],
                      "conditional": e["conditional"], "digest": e["digest"]} for e in served]
    periods = sorted({r["period"] for r in requests_seen})
    landed = set()
    snapshots = open_table(cfg.table_path("page_snapshots"))
    if snapshots is not None:
        for url, period in zip(*snapshots.to_pyarrow_table(columns=["url", "period"]).to_pydict().values()):
            landed.add((period, *urlsplit(url)[2:4]))
    pages = open_table(cfg.table_path("source_pages"))
    if pages is not None:  # the source crawler lands a new page once: taken for content in every period
        for url in pages.to_pyarrow_table(columns=["page_url"]).column("page_url").to_pylist():
            landed.update((p, *urlsplit(url)[2:4]) for p in periods)
    refused = Counter()
    dead = open_table(cfg.table_path("dead_letter"))
    if dead is not None:
        rows = dead.to_pyarrow_table(columns=["parser", "reason"]).to_pydict()
        refused.update(f"{p}: {r.split(':')[0]}" for p, r in zip(rows["parser"], rows["reason"]))
    result = classify(requests_seen, landed, lambda path, query: truths[(path, query)])
    result = {"label": label, "hygiene": hygiene, "scope": site.scope.model_dump(mode="json"),
              "conditional_fetches": site.conditional_fetches, "seconds": round(seconds, 1),
              "requests_per_s": round(result["requests"] / seconds, 1) if seconds else None, **result,
              "budget_reached": len(entries) >= args.budget, "served_after_budget": len(entries) - len(served),
              "periods": {"first": periods[0], "last": periods[-1], "count": len(periods)} if periods else None,
              "not_web": dict(sorted(outside.items())), "refused": dict(sorted(refused.items())),
              "crawlers": {name: {k: v for k, v in st.items() if isinstance(v, (int, float, str, type(None)))}
                           for name, st in status.items()}}
    print(f"{label:6s} live {result['requests']} requests in {seconds:.0f}s: wasted {result['wasted']} "
          f"({result['wasted_share']:.1%}) {result['waste']}; {result['useful_pages']} useful pages, "
          f"{result['bytes_per_useful_page']} bytes each; 304s {result['http_304']}; unchanged pages' revisit bytes "
          f"saved {result['revisit_bytes_saved_share']}; refused {dict(refused)}")
    return result


def classify(requests_seen: list[dict], landed: set, truth) -> dict:
    """Every request of a run (in order, each with its revisit ``period``) classified by the world's truth
    (evaluation side; ``truth(path, query)`` is :meth:`focuscrawl.world.mess.Mess.truth`): waste by kind,
    useful pages, bytes, 304s, and the bytes unchanged pages cost on revisits against their full bodies.
    ``landed``: ``(period, path, query)`` of every URL the crawl kept as content."""
    counts = Counter()
    total_bytes = sum(r["bytes"] for r in requests_seen)
    last_full: dict[tuple[str, str], dict] = {}  # URL fetched -> its last full (200) answer
    seen_pages: dict[int, set[str]] = {}      # period -> the true pages fetched in it
    seen_urls: dict[int, set[tuple]] = {}     # period -> the URLs that answered a page in it
    unchanged_spent = unchanged_full = ignored = same_url = 0
    for r in requests_seen:
        counts["requests"] += 1
        if r["status"] == 304:
            counts["http_304"] += 1
        url = (r["path"], r["query"])
        before = last_full.get(url)
        unchanged = before is not None and (r["status"] == 304 or r.get("digest") == before["digest"])
        full_with_validator = unchanged and r["status"] == 200 and before["validator"]
        if unchanged:  # a revisit of an unchanged page: what it cost against what its full body costs
            unchanged_spent += r["bytes"]
            unchanged_full += before["bytes"]
        if r["status"] == 200 and r.get("digest"):
            last_full[url] = r
        r["kind"] = _kind(r, full_with_validator, seen_pages.setdefault(r["period"], set()), landed, truth)
        counts[r["kind"]] += 1
        urls = seen_urls.setdefault(r["period"], set())
        # the page again under a URL that answered it before in the period: a redirect's end reached from
        # another URL, or (live) the other loop fetching it
        same_url += r["kind"] == "same_page_other_url" and url in urls
        if r["status"] in (200, 304):
            urls.add(url)
        # asked conditionally, answered in full: the server ignores validators
        ignored += r["kind"] not in WASTE and full_with_validator and r["conditional"]
    wasted = sum(counts[k] for k in WASTE)
    fetches = counts["requests"]
    examples: dict[str, list[str]] = {}
    for r in requests_seen:
        if r.get("kind") in WASTE and len(examples.setdefault(r["kind"], [])) < 5:
            examples[r["kind"]].append(r["path"] + ("?" + r["query"] if r["query"] else ""))
    return {
        "requests": fetches, "wasted": wasted, "wasted_share": round(wasted / fetches, 4) if fetches else None,
        "waste": {k: counts[k] for k in WASTE},
        "useful_pages": counts["useful"], "bytes": total_bytes,
        "bytes_per_useful_page": round(total_bytes / counts["useful"], 1) if counts["useful"] else None,
        "same_page_same_url": same_url, "http_304": counts["http_304"], "validator_ignored_by_server": ignored,
        "revisit_unchanged_bytes": unchanged_spent, "revisit_unchanged_full_bytes": unchanged_full,
        "revisit_bytes_saved_share": round(1 - unchanged_spent / unchanged_full, 4) if unchanged_full else None,
        "counts": dict(sorted(counts.items())), "waste_examples": examples,
    }


def _kind(r: dict, full_with_validator: bool, seen_pages: set[str], landed: set, truth) -> str:
    """The class of one request (exactly one): a waste kind of :data:`WASTE`, ``useful`` (a true page's first
    fetch in the period), or what else it was (redirect hop, robots.txt, the soft-404 probe, a refused soft-404,
    a content source)."""
    if r["path"].endswith("/robots.txt"):
        return "robots_txt"
    found = truth(r["path"], r["query"])
    kind, page = found["kind"], found["page"]
    if kind == "loop":
        return "redirect_loop"
    if kind == "redirect":
        return "redirect_hop"
    if kind == "calendar":
        return "trap_page"
    if "focuscrawl-no-such-page-" in r["path"]:
        return "soft404_probe"  # the crawler's own probe for its directory's "not found" answer
    if kind == "soft404":
        return "soft404_as_content" if (r["period"], r["path"], r["query"]) in landed else "soft404_refused"
    if page is None or r["status"] not in (200, 304):
        if full_with_validator and not r["conditional"]:
            return "unchanged_body_with_validator"  # a content source's recrawl, paid in full
        return f"other_{kind}"
    if page in seen_pages:
        return "same_page_other_url"
    seen_pages.add(page)
    if full_with_validator and not r["conditional"]:
        return "unchanged_body_with_validator"  # the page's revisit, paid in full: its validator went unused
    return "useful"


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.config import settings
    from focuscrawl.experiments.run_record import add_draft_argument, git_commit, start_run
    from focuscrawl.project.loading import load_project

    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=1500, help="HTTP requests per run (redirect hops, robots.txt included)")
    ap.add_argument("--periods", type=int, default=2, help="revisit periods the budget is spread over")
    ap.add_argument("--seed", type=int, default=0, help="the world's seed (both runs)")
    ap.add_argument("--data", default=str(cfg.data_dir) if cfg.data_dir else "none",
                    help="folder with wikispeedia/ (the world's web from real pages), or none (generated)")
    ap.add_argument("--project", type=Path, default=ROOT / "projects" / "world.toml",
                    help="project file whose [world.mess], [world.validators] and first site are used")
    ap.add_argument("--seed-path", action="append", default=None, help="seed page paths (default: the project's "
                    "revisit seeds, or each site's first page of a generated world)")
    ap.add_argument("--discover", default=r"/site/[^/]+/", help="regex: outlinks matching it become known pages")
    ap.add_argument("--live", action="store_true", help="run the live platform (Kafka, the world, the revisitor "
                    "and the source crawler as `focuscrawl up` starts them) instead of the revisitor in process")
    ap.add_argument("--max-seconds", type=float, default=900.0,
                    help="--live: stop a run that has not spent its budget by then (the result says so)")
    ap.add_argument("--out", type=Path, default=None, help=f"default {PUBLISHED.name}, with --live {PUBLISHED_LIVE.name}")
    add_draft_argument(ap)
    args = ap.parse_args(argv)
    args.out = args.out or (PUBLISHED_LIVE if args.live else PUBLISHED)
    if args.live and (args.seed != 0 or args.data != ap.get_default("data")):
        ap.error("--live runs the world as `focuscrawl up` starts it: seed 0, the settings' data folder")
    # under python -m bench (never --live), the runner refuses (or not: --draft) itself
    if args.live or args.out.resolve() == PUBLISHED.resolve():
        code = start_run(args.out.parent, args.draft, out_flag="--out")
    else:
        code = git_commit(ROOT)
    logging.disable(logging.WARNING)  # each refused page logs a warning; the result counts them
    data = None if args.data == "none" else Path(args.data)
    project = load_project(args.project, check_files=False, check_env=False)
    if args.seed_path is None:
        wiki = data is not None and (data / "wikispeedia" / "links.tsv").exists()
        seeds = [urlsplit(u).path for u in project.loops.revisits.seeds] if wiki else []
        args.seed_path = seeds or ["/site/topic0.wiki.test/wiki/Page_0", "/site/topic1.wiki.test/wiki/Page_1"]
    load_before = [round(v, 2) for v in os.getloadavg()]
    if args.live:
        args.live_var = Path(cfg.var_dir) / "bench-hygiene-live"
        runs = {"before": run_live("before", False, args), "after": run_live("after", True, args)}
        what = ("wasted fetches, bytes per useful page and 304s on the messy world with validators, the live "
                "platform (focuscrawl up: Kafka, the world, the revisitor and the source crawler, their Delta "
                "landings) with the site's hygiene off (before: no [sites.scope], conditional_fetches = false) and "
                "as shipped (after); rewrite rules and canonical keys in both; same seed and budget of web requests "
                "the world served to the crawlers")
    else:
        runs = {"before": run("before", False, args, data, project), "after": run("after", True, args, data, project)}
        what = ("wasted fetches, bytes per useful page and 304s on the messy world with validators, the crawler's "
                "switchable hygiene off (before: no scope or trap rules, no soft-404 probe, unconditional revisits) "
                "and on (after: the project site's rules, soft-404 probe, conditional revisits), canonical keys in "
                "both; same seed and budget; PageRevisitor + Fetcher against the world over HTTP")
    result = {
        "what": what, "mode": "live" if args.live else "in-process",
        "commit": code["commit"], "dirty_files": code["dirty_files"], "draft": args.draft,
        "threads": {v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "load_before": load_before, "load_after": [round(v, 2) for v in os.getloadavg()],
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "world": {"seed": args.seed, "web": "wikispeedia" if data is not None and (data / "wikispeedia").exists()
                  else "generated", "mess": project.world.mess.model_dump(mode="json"),
                  "validators": project.world.validators.model_dump(mode="json")},
        "budget": args.budget, **({"periods": None, "revisit_period_s": project.loops.revisits.revisit_seconds,
                                   "seeds": {"revisits": list(project.loops.revisits.seeds),
                                             "sources": list(project.loops.sources.seeds)},
                                   "discover": project.loops.revisits.discover} if args.live else
                                  {"periods": args.periods, "seeds": args.seed_path, "discover": args.discover}),
        "runs": runs,
    }
    write_result(args.out, result)
    plot(result, args.out.with_suffix(".png"))
    return 0


def plot(res: dict, path: Path) -> Path:
    """The result's picture: fetches by waste kind, before and after (left), and what a revisit of the
    unchanged pages cost against their full bodies (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = res["runs"]
    labels = list(runs)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [3, 1.3]})
    bottom = [0.0] * len(labels)
    for kind in WASTE:
        shares = [100 * r["waste"][kind] / r["requests"] for r in runs.values()]
        left.barh(labels, shares, left=bottom, label=kind.replace("_", " "))
        bottom = [b + s for b, s in zip(bottom, shares)]
    for i, r in enumerate(runs.values()):
        left.text(bottom[i] + 0.2, i, f"{100 * r['wasted_share']:.1f}% of {r['requests']} fetches", va="center")
    left.axvline(2, color="k", ls="--", lw=0.8)
    left.set(xlabel="wasted fetches, % of all fetches (dashed: 2% goal)", xlim=(0, max(bottom + [2]) * 1.45))
    left.invert_yaxis()
    left.legend(fontsize=7, loc="lower right")
    saved = [100 * (r["revisit_bytes_saved_share"] or 0) for r in runs.values()]
    right.bar(labels, saved, color="tab:green")
    right.axhline(50, color="k", ls="--", lw=0.8)
    right.set(ylabel="revisit bytes saved on unchanged pages, %", ylim=(0, 100))
    for i, v in enumerate(saved):
        right.text(i, v + 2, f"{v:.0f}%", ha="center")
    how = f"{res['periods']} periods" if res.get("mode") != "live" else "live platform: revisitor and source crawler"
    fig.suptitle(f"crawl hygiene on the messy world (seed {res['world']['seed']}, {res['budget']} requests, "
                 f"{how}, commit {(res['commit'] or '?')[:10]})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plotted to {path}")
    return path


def summary(res: dict) -> list[dict]:
    """The benchmark table's rows (``python -m bench``): one per run."""
    rows = []
    for label, r in res["runs"].items():
        rows.append({"what": f"hygiene {label} (scope, soft-404 and conditional revisits {'on' if r['hygiene'] else 'off'})",
                     "n": r["requests"], "seconds": r["seconds"], "rate": r["requests_per_s"], "unit": "requests/s",
                     "recall": None,
                     "note": f"wasted {r['wasted_share']:.1%} of requests {r['waste']}, {r['bytes_per_useful_page']:,.0f} "
                             f"bytes per useful page, {r['http_304']} 304s, "
                             f"{(r['revisit_bytes_saved_share'] or 0):.0%} of unchanged pages' revisit bytes saved"})
    return rows


if __name__ == "__main__":
    sys.exit(main())
