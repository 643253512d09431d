"""Requests per second the world serves on this machine: listings and user pages, against a static baseline.

The baseline is a handler answering fixed bytes on the same server stack (ThreadingHTTPServer,
HTTP/1.1 keep-alive, same client), so the ratio isolates the world's own cost from the stack's.

    python bench/world_bench.py [--seconds 5] [--users 100000] [--data DIR|none]

Writes ``--out`` (default ``$FOCUSCRAWL_VAR/bench/world.json``).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import requests

from focuscrawl.config import settings
from focuscrawl.world import build_world
from focuscrawl.world.server import WorldServer, _Handler
from result_json import default_out, write_result

STATIC = json.dumps({"kind": "Listing", "data": {"after": None, "children": []}}).encode()


class StaticHandler(_Handler):
    def do_GET(self) -> None:
        self._send(200, "application/json", STATIC)


def rate(session: requests.Session, urls, seconds: float) -> dict:
    n, nbytes, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        r = session.get(next(urls), timeout=30)
        r.raise_for_status()
        n += 1
        nbytes += len(r.content)
    elapsed = time.perf_counter() - t0
    return {"requests": n, "seconds": round(elapsed, 3), "rps": round(n / elapsed, 1), "mean_bytes": nbytes // max(n, 1)}


def cycle(items):
    while True:
        yield from items


def main(argv: list[str] | None = None) -> int:
    cfg = settings()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--data", default=str(cfg.data_dir) if cfg.data_dir else "none")
    ap.add_argument("--out", type=Path, default=default_out("world"))
    args = ap.parse_args(argv)
    data = None if args.data == "none" else Path(args.data)
    t0 = time.perf_counter()
    world = build_world(0, data_dir=data, cache_dir=cfg.var_dir, users=args.users, paused=True, rate_limit=0)
    build_s = time.perf_counter() - t0
    world.clock.set(world.clock.now() + 3600)  # an hour of stream beyond the warm-up
    static = ThreadingHTTPServer(("127.0.0.1", 0), StaticHandler)
    static.daemon_threads = True
    import threading

    threading.Thread(target=static.serve_forever, daemon=True).start()
    results: dict = {"build_seconds": round(build_s, 2), "users": args.users,
                     "corpus": type(world.population.corpus).__name__, "python": platform.python_version()}
    with WorldServer(world) as server:
        s = requests.Session()
        base = server.url
        subs = world.population.communities
        rng = random.Random(0)
        names = [world.population.name(rng.randrange(args.users)) for _ in range(100_000)]
        results["static_baseline"] = rate(s, cycle([f"http://127.0.0.1:{static.server_address[1]}/x"]), args.seconds)
        results["listing_all_new"] = rate(s, cycle([base + "/r/all/new.json?limit=100"]), args.seconds)
        results["listing_subreddit"] = rate(s, cycle([f"{base}/r/{sub}/new.json?limit=100" for sub in subs]), args.seconds)
        results["user_page_cold"] = rate(s, iter(f"{base}/user/{n}/submitted.json?limit=100" for n in names), args.seconds)
        warm = names[:200]
        for n in warm:
            s.get(f"{base}/user/{n}/submitted.json?limit=100", timeout=30)
        results["user_page_warm"] = rate(s, cycle([f"{base}/user/{n}/submitted.json?limit=100" for n in warm]), args.seconds)
        if world.web is not None:
            results["web_source_page"] = rate(s, cycle([base + src.path for src in world.web.sources]), args.seconds)
    static.shutdown()
    static.server_close()
    base_rps = results["static_baseline"]["rps"]
    for k, v in results.items():
        if isinstance(v, dict) and k != "static_baseline":
            v["ratio_to_static"] = round(v["rps"] / base_rps, 3)
            print(f"{k:20s} {v['rps']:8.1f} req/s  {v['ratio_to_static']:.3f} x static ({base_rps:.0f} req/s)")
    print(f"build {build_s:.2f}s")
    write_result(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
