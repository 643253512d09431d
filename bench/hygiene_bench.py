"""Crawl hygiene on the messy world: wasted fetches, bytes per useful page and 304s, scope rules off and on.

    python bench/hygiene_bench.py [--budget 1500] [--periods 2] [--data DIR|none] [--seed 0]

What runs: the world in this process (``focuscrawl.world.build_world``, its web's mess as
``projects/world.toml``'s ``[world.mess]`` says: every behaviour on) served over real HTTP
(``WorldServer``), and the revisitor's own components against it: :class:`PageRevisitor`
(``focuscrawl.outlinks.revisit``: the frontier, canonical link keys through ``parse.html``, snapshots)
fetching through the fetch layer (``Fetcher``: robots.txt, redirects hop by hop, gzip), discovering
every outlink of the world's sites (``--discover``), with the world site's scope
(``[sites.scope]`` of ``projects/world.toml``, :mod:`focuscrawl.fetch.scope`) for "after" and no rule
at all (``ScopeRules.off()``) for "before". Not run: Kafka, Delta, Airflow (the snapshot rows are
kept in memory; the full platform would add nothing to what is fetched). Each run gets a fresh world
of the same seed and the same budget of HTTP requests (redirect hops, robots.txt and soft-404 probes
count; the revisit that crosses the budget is the last, with all its requests), spent
over ``--periods`` revisit periods (the world's clock moves a day between two, so pages change).

Every request is classified on the evaluation side by the world's truth (``Mess.truth``: which true
page a URL serves), never on the crawl path. Wasted: the page fetched again under another URL in the
same period, a trap page (the calendar), a redirect-loop hop, a soft-404 taken for content (a
snapshot was emitted for it; one the crawler refused, and its probe of the directory, are not), and an unchanged body fetched in full where the previous answer offered
a validator (``ETag``/``Last-Modified``; the world offers none yet, so this is 0 until conditional
fetches land). Useful: a true page's first fetch in a period. Bytes are the bodies' wire bytes
(``Content-Length``, gzipped where the world gzips), redirect and robots.txt answers included.

Writes ``bench/results/hygiene.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from result_json import write_result

ROOT = Path(__file__).resolve().parents[1]
WASTE = ("same_page_other_url", "trap_page", "redirect_loop", "soft404_as_content", "unchanged_body_with_validator")


def run(label: str, rules, args, data, mess) -> dict:
    from focuscrawl.config import settings
    from focuscrawl.fetch import Fetcher, HostPoliteness
    from focuscrawl.fetch.guard import AddressGuard
    from focuscrawl.fetch.scope import Scope
    from focuscrawl.outlinks.revisit import PageRevisitor
    from focuscrawl.outlinks.urls import virtual_host_domain
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    cfg = settings()
    world = build_world(args.seed, data_dir=data, cache_dir=cfg.var_dir, users=1000, paused=True, rate_limit=0,
                        mess=mess)
    web = world.web
    requests_seen: list[dict] = []

    def on_response(response, *a, **kw):  # every HTTP answer the crawler gets: redirect hops and robots.txt too
        parts = urlsplit(response.url)
        requests_seen.append({"path": parts.path, "query": parts.query, "status": response.status_code,
                              "bytes": int(response.headers.get("Content-Length") or 0),
                              "validator": bool(response.headers.get("ETag") or response.headers.get("Last-Modified"))})
        return response

    with WorldServer(world) as server:
        fetcher = Fetcher("focuscrawl-bench (+mailto:bench@focuscrawl.invalid)",
                          guard=AddressGuard([server.url.split("//")[1]]), politeness=HostPoliteness(min_delay=0.0))
        fetcher.session.hooks["response"].append(on_response)
        bodies: dict[str, tuple[str, bool]] = {}   # url -> its last body's digest, and whether a validator came with it
        unchanged_with_validator = Counter()
        period_now = [0.0]

        class Source:  # the fetch layer, with the bench's look at each body (evaluation side)
            def get(self, url):
                return self.fetch(url).body

            def fetch(self, url):
                result = fetcher.fetch(url)
                digest = hashlib.sha1(result.body).hexdigest()
                before = bodies.get(url)  # (digest, whether that answer offered a validator)
                if before == (digest, True) and result.status == 200:
                    unchanged_with_validator[int(period_now[0])] += 1
                bodies[url] = (digest, requests_seen[-1]["validator"])
                return result

        rows: list[dict] = []
        refusals, after_fetch = Counter(), Counter()
        scope = Scope(rules, on_refusal=lambda r: refusals.update([r.reason]), host_of=virtual_host_domain())
        source = Source()
        soft404 = None
        if rules.detect_soft404:
            from focuscrawl.fetch.soft404 import Soft404Probe
            from focuscrawl.outlinks.revisit import page_content

            soft404 = Soft404Probe(source.get, lambda body, url: page_content(body, url)[0])
        revisitor = PageRevisitor(source, rows.append, lambda: period_now[0], origin=0.0, interval=1.0,
                                  domain_of=virtual_host_domain(), discover=args.discover, max_pages=10**7,
                                  scope=scope, soft404=soft404,
                                  on_rejection=lambda r: after_fetch.update([r.parser]))
        revisitor.add([server.url + s for s in args.seed_path])
        started = time.perf_counter()
        marks = []
        for period in range(args.periods):
            period_now[0] = float(period)
            if period:
                world.clock.advance(86400)  # a day on the world's clock: some pages gained links
            marks.append(len(requests_seen))
            limit = args.budget * (period + 1) // args.periods
            revisitor.revisit_next()
            while revisitor.due() and len(requests_seen) < limit:
                revisitor.revisit_next()
        seconds = time.perf_counter() - started
        fetcher.close()
    marks.append(len(requests_seen))
    counts = Counter()
    snapshots = {(r["period"], urlsplit(r["url"]).path, urlsplit(r["url"]).query) for r in rows}
    useful_pages = 0
    total_bytes = sum(r["bytes"] for r in requests_seen)
    for period in range(args.periods):
        seen_pages: set[str] = set()
        for r in requests_seen[marks[period]:marks[period + 1]]:
            counts["requests"] += 1
            if r["status"] == 304:
                counts["http_304"] += 1
            if r["path"].endswith("/robots.txt"):
                counts["robots_txt"] += 1
                continue
            truth = mess.truth(web, r["path"], r["query"])
            kind, page = truth["kind"], truth["page"]
            if kind == "loop":
                counts["redirect_loop"] += 1
            elif kind == "redirect":
                counts["redirect_hop"] += 1
            elif kind == "calendar":
                counts["trap_page"] += 1
            elif "focuscrawl-no-such-page-" in r["path"]:
                counts["soft404_probe"] += 1  # the crawler's own probe for its directory's "not found" answer
            elif kind == "soft404":
                taken = (period, r["path"], r["query"]) in snapshots
                counts["soft404_as_content" if taken else "soft404_refused"] += 1
            elif page is not None and r["status"] == 200:
                if page in seen_pages:
                    counts["same_page_other_url"] += 1
                else:
                    seen_pages.add(page)
                    useful_pages += 1
                    counts["useful"] += 1
            else:
                counts[f"other_{kind}"] += 1
        counts["unchanged_body_with_validator"] += unchanged_with_validator[period]
    wasted = sum(counts[k] for k in WASTE)
    fetches = counts["requests"]
    result = {
        "label": label, "scope": rules.model_dump(mode="json"), "requests": fetches, "seconds": round(seconds, 2),
        "requests_per_s": round(fetches / seconds, 1) if seconds else None,
        "wasted": wasted, "wasted_share": round(wasted / fetches, 4) if fetches else None,
        "waste": {k: counts[k] for k in WASTE},
        "useful_pages": useful_pages, "bytes": total_bytes,
        "bytes_per_useful_page": round(total_bytes / useful_pages, 1) if useful_pages else None,
        "http_304": counts["http_304"], "counts": dict(sorted(counts.items())),
        "scope_refused": dict(sorted(refusals.items())), "refused_after_fetch": dict(sorted(after_fetch.items())),
        "known_pages": len(revisitor.ranking),
        "snapshots": len(rows), "fetch_failures": revisitor.failures,
    }
    print(f"{label:6s} {fetches} requests: wasted {wasted} ({result['wasted_share']:.1%}) {result['waste']}; "
          f"{useful_pages} useful pages, {result['bytes_per_useful_page']} bytes each; 304s {counts['http_304']}; "
          f"scope refused {dict(refusals)}, after the fetch {dict(after_fetch)}")
    return result


def _git(*args) -> str | None:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.config import settings
    from focuscrawl.fetch.scope import ScopeRules
    from focuscrawl.project.loading import load_project
    from focuscrawl.world.mess import Mess

    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=1500, help="HTTP requests per run (redirect hops, robots.txt included)")
    ap.add_argument("--periods", type=int, default=2, help="revisit periods the budget is spread over")
    ap.add_argument("--seed", type=int, default=0, help="the world's seed (both runs)")
    ap.add_argument("--data", default=str(cfg.data_dir) if cfg.data_dir else "none",
                    help="folder with wikispeedia/ (the world's web from real pages), or none (generated)")
    ap.add_argument("--project", type=Path, default=ROOT / "projects" / "world.toml",
                    help="project file whose [world.mess] and first site's [sites.scope] are used")
    ap.add_argument("--seed-path", action="append", default=None, help="seed page paths (default: the project's "
                    "revisit seeds, or each site's first page of a generated world)")
    ap.add_argument("--discover", default=r"/site/[^/]+/", help="regex: outlinks matching it become known pages")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "hygiene.json")
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)  # each refused page logs a warning; the result counts them
    data = None if args.data == "none" else Path(args.data)
    project = load_project(args.project, check_files=False, check_env=False)
    mess, after = Mess.of(project.world.mess), project.site().scope
    if args.seed_path is None:
        wiki = data is not None and (data / "wikispeedia" / "links.tsv").exists()
        seeds = [urlsplit(u).path for u in project.loops.revisits.seeds] if wiki else []
        args.seed_path = seeds or ["/site/topic0.wiki.test/wiki/Page_0", "/site/topic1.wiki.test/wiki/Page_1"]
    load_before = [round(v, 2) for v in os.getloadavg()]
    runs = {"before": run("before", ScopeRules.off(), args, data, mess), "after": run("after", after, args, data, mess)}
    status = _git("status", "--porcelain", "--untracked-files=no")
    result = {
        "what": "wasted fetches, bytes per useful page and 304s on the messy world, scope and trap rules off "
                "(before) and on (after), same seed and budget; PageRevisitor + Fetcher against the world over HTTP",
        "commit": _git("rev-parse", "HEAD"), "dirty_files": len(status.splitlines()) if status else 0,
        "threads": {v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "load_before": load_before, "load_after": [round(v, 2) for v in os.getloadavg()],
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "world": {"seed": args.seed, "web": "wikispeedia" if data is not None and (data / "wikispeedia").exists()
                  else "generated", "mess": mess.model_dump(mode="json")},
        "budget": args.budget, "periods": args.periods, "seeds": args.seed_path, "discover": args.discover,
        "runs": runs,
    }
    write_result(args.out, result)
    return 0


def summary(res: dict) -> list[dict]:
    """The benchmark table's rows (``python -m bench``): one per run."""
    rows = []
    for label, r in res["runs"].items():
        rows.append({"what": f"hygiene {label} (scope and trap rules {'off' if label == 'before' else 'on'})",
                     "n": r["requests"], "seconds": r["seconds"], "rate": r["requests_per_s"], "unit": "requests/s",
                     "recall": None,
                     "note": f"wasted {r['wasted_share']:.1%} of requests {r['waste']}, {r['bytes_per_useful_page']:,.0f} "
                             f"bytes per useful page, {r['http_304']} 304s"})
    return rows


if __name__ == "__main__":
    sys.exit(main())
