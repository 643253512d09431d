"""Crawl hygiene on the messy world: wasted fetches, bytes per useful page and 304s, the crawler's hygiene off and on.

    python bench/hygiene_bench.py [--budget 1500] [--periods 2] [--data DIR|none] [--seed 0] [--draft]

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
the same period, a trap page (the calendar), a redirect-loop hop, a soft-404 taken for content (a
snapshot was emitted for it; one the crawler refused, and its probe of the directory, are not), and an
unchanged page's revisit paid in full although its last answer offered a validator that the request did
not send (a server that ignores a validator it was sent is counted apart, ``validator_ignored_by_server``).
Useful: a true page's first fetch in a period (a 304 included). Bytes are the bodies' wire bytes
(``Content-Length``, gzipped where the world gzips), redirect and robots.txt answers included;
``revisit_bytes_saved_share`` is one minus what the revisits of unchanged pages cost over what their last
full answers cost. ``--draft`` allows writing ``bench/results/hygiene.json`` from a tree with uncommitted changes
(refused otherwise: a published result names a commit anyone can check out; under ``python -m bench``
the runner refuses for it). Draws ``hygiene.png`` beside
the result.

Writes ``bench/results/hygiene.json``.
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

    def on_response(response, *a, **kw):  # every HTTP answer the crawler gets: redirect hops and robots.txt too
        parts = urlsplit(response.url)
        sent = response.request.headers
        requests_seen.append({"path": parts.path, "query": parts.query, "status": response.status_code,
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
        period_now = [0.0]
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
    result = classify(requests_seen, marks, rows, mess, web)
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


def classify(requests_seen: list[dict], marks: list[int], rows: list[dict], mess, web) -> dict:
    """Every request of a run classified by the world's truth (evaluation side): waste by kind, useful pages,
    bytes, 304s, and the bytes unchanged pages cost on revisits against their full bodies."""
    counts = Counter()
    snapshots = {(r["period"], urlsplit(r["url"]).path, urlsplit(r["url"]).query) for r in rows}
    total_bytes = sum(r["bytes"] for r in requests_seen)
    last_full: dict[tuple[str, str], dict] = {}  # URL fetched -> its last full (200) answer
    unchanged_spent = unchanged_full = ignored = 0
    for period in range(len(marks) - 1):
        seen_pages: set[str] = set()
        for r in requests_seen[marks[period]:marks[period + 1]]:
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
            if r["status"] == 200 and "digest" in r:
                last_full[url] = r
            r["kind"] = _kind(r, period, full_with_validator, seen_pages, snapshots, mess, web)
            counts[r["kind"]] += 1
            ignored += r["kind"] == "useful" and full_with_validator  # asked conditionally; the server ignores validators
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
        "http_304": counts["http_304"], "validator_ignored_by_server": ignored,
        "revisit_unchanged_bytes": unchanged_spent, "revisit_unchanged_full_bytes": unchanged_full,
        "revisit_bytes_saved_share": round(1 - unchanged_spent / unchanged_full, 4) if unchanged_full else None,
        "counts": dict(sorted(counts.items())), "waste_examples": examples,
    }


def _kind(r: dict, period: int, full_with_validator: bool, seen_pages: set[str], snapshots: set, mess, web) -> str:
    """The class of one request (exactly one): a waste kind of :data:`WASTE`, ``useful`` (a true page's first
    fetch in the period), or what else it was (redirect hop, robots.txt, the soft-404 probe, a refused soft-404)."""
    if r["path"].endswith("/robots.txt"):
        return "robots_txt"
    truth = mess.truth(web, r["path"], r["query"])
    kind, page = truth["kind"], truth["page"]
    if kind == "loop":
        return "redirect_loop"
    if kind == "redirect":
        return "redirect_hop"
    if kind == "calendar":
        return "trap_page"
    if "focuscrawl-no-such-page-" in r["path"]:
        return "soft404_probe"  # the crawler's own probe for its directory's "not found" answer
    if kind == "soft404":
        return "soft404_as_content" if (period, r["path"], r["query"]) in snapshots else "soft404_refused"
    if page is None or r["status"] not in (200, 304):
        return f"other_{kind}"
    if page in seen_pages:
        return "same_page_other_url"
    seen_pages.add(page)
    if full_with_validator and not r["conditional"]:
        return "unchanged_body_with_validator"  # the page's revisit, paid in full: its validator went unused
    return "useful"


def main(argv: list[str] | None = None) -> int:
    from focuscrawl.config import settings
    from focuscrawl.experiments.run_record import add_draft_argument, git_commit, refuse_unpublishable
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
    ap.add_argument("--out", type=Path, default=PUBLISHED)
    add_draft_argument(ap)
    args = ap.parse_args(argv)
    code = git_commit(ROOT)
    if args.out.resolve() == PUBLISHED.resolve():  # under python -m bench, the runner refuses (or not: --draft) itself
        refuse_unpublishable(args.out.parent, code, args.draft, out_flag="--out")
    logging.disable(logging.WARNING)  # each refused page logs a warning; the result counts them
    data = None if args.data == "none" else Path(args.data)
    project = load_project(args.project, check_files=False, check_env=False)
    if args.seed_path is None:
        wiki = data is not None and (data / "wikispeedia" / "links.tsv").exists()
        seeds = [urlsplit(u).path for u in project.loops.revisits.seeds] if wiki else []
        args.seed_path = seeds or ["/site/topic0.wiki.test/wiki/Page_0", "/site/topic1.wiki.test/wiki/Page_1"]
    load_before = [round(v, 2) for v in os.getloadavg()]
    runs = {"before": run("before", False, args, data, project), "after": run("after", True, args, data, project)}
    result = {
        "what": "wasted fetches, bytes per useful page and 304s on the messy world with validators, the crawler's "
                "switchable hygiene off (before: no scope or trap rules, no soft-404 probe, unconditional revisits) "
                "and on (after: the project site's rules, soft-404 probe, conditional revisits), canonical keys in "
                "both; same seed and budget; PageRevisitor + Fetcher against the world over HTTP",
        "commit": code["commit"], "dirty_files": code["dirty_files"], "draft": args.draft,
        "threads": {v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "load_before": load_before, "load_after": [round(v, 2) for v in os.getloadavg()],
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "world": {"seed": args.seed, "web": "wikispeedia" if data is not None and (data / "wikispeedia").exists()
                  else "generated", "mess": project.world.mess.model_dump(mode="json"),
                  "validators": project.world.validators.model_dump(mode="json")},
        "budget": args.budget, "periods": args.periods, "seeds": args.seed_path, "discover": args.discover,
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
    fig.suptitle(f"crawl hygiene on the messy world (seed {res['world']['seed']}, {res['budget']} requests, "
                 f"{res['periods']} periods, commit {(res['commit'] or '?')[:10]})", fontsize=9)
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
