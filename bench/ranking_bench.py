"""How the user ranking scales: updates/s, pop latency and memory per candidate at 1M (and 10M).

Seed 000 section II (complexity): the ranking must take an update per post seen and a pop per
extracted user, whatever the number of candidates. ``PriorityFrontier`` (indexed heap over
arrays) is compared with the usual Python baseline measured in the same run: ``heapq`` of
``(-score, seq, key)`` tuples plus a dict of current scores, with lazy deletion (a changed
score pushes a new tuple; stale ones are skipped at pop time).

Each (structure, size) runs in a fresh subprocess so the memory figure is a clean RSS delta
(the key strings are created before the baseline RSS is read: the caller owns them).

    python bench/ranking_bench.py                 # 1M candidates
    python bench/ranking_bench.py --sizes 1000000,10000000    # 10M too (~10 min on a busy 2-core box, ~4 GB)

Writes ``bench/results/ranking.json`` and prints the ratios.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "ranking.json"
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class LazyHeap:
    """The baseline: heapq + dict, lazy deletion."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, str]] = []
        self.current: dict[str, int] = {}  # key -> seq of its live heap entry
        self.seq = 0

    def update(self, key: str, score: float) -> None:
        self.seq += 1
        self.current[key] = self.seq
        heapq.heappush(self.heap, (-score, self.seq, key))

    def pop(self) -> tuple[str, float]:
        while True:
            neg, seq, key = heapq.heappop(self.heap)
            if self.current.get(key) == seq:
                del self.current[key]
                return key, -neg


def make(kind: str):
    if kind == "frontier":
        from focuscrawl.frontier import PriorityFrontier

        return PriorityFrontier()
    return LazyHeap()


def run_one(kind: str, n: int, updates: int, pops: int, seed: int) -> dict:
    rng = random.Random(seed)
    keys = [f"user_{i:09d}" for i in range(n)]
    scores = [rng.random() for _ in range(n)]
    targets = [keys[rng.randrange(n)] for _ in range(updates)]
    new_scores = [rng.random() for _ in range(updates)]
    gc.collect()
    rss0 = rss_bytes()
    ranking = make(kind)
    t0 = time.perf_counter()
    for key, score in zip(keys, scores):
        ranking.update(key, score)
    insert_s = time.perf_counter() - t0
    gc.collect()
    rss1 = rss_bytes()

    # Timed in chunks and summarised by the median chunk: robust to a busy, shared machine.
    chunk = max(1, updates // 50)
    rates = []
    for start in range(0, updates, chunk):
        t0 = time.perf_counter()
        for key, score in zip(targets[start:start + chunk], new_scores[start:start + chunk]):
            ranking.update(key, score)
        rates.append(min(chunk, updates - start) / (time.perf_counter() - t0))
    rates.sort()
    gc.collect()
    rss2 = rss_bytes()

    lat = []
    clock = time.perf_counter_ns
    for _ in range(pops):
        t = clock()
        ranking.pop()
        lat.append(clock() - t)
    lat.sort()
    return {
        "structure": kind,
        "candidates": n,
        "inserts_per_s": n / insert_s,
        "updates_per_s": rates[len(rates) // 2],
        "pop_us_mean": sum(lat) / len(lat) / 1000,
        "pop_us_p50": lat[len(lat) // 2] / 1000,
        "pop_us_p99": lat[int(len(lat) * 0.99)] / 1000,
        "bytes_per_candidate": (rss1 - rss0) / n,
        "bytes_per_candidate_after_updates": (rss2 - rss0) / n,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000000", help="comma-separated candidate counts (add 10000000 for 10M)")
    ap.add_argument("--updates", type=int, default=500_000, help="score changes of existing candidates to time")
    ap.add_argument("--pops", type=int, default=100_000, help="pops to time")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # child mode: "kind:n"
    args = ap.parse_args(argv)
    if args.one:
        kind, n = args.one.split(":")
        print(json.dumps(run_one(kind, int(n), args.updates, args.pops, args.seed)))
        return

    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        pair = {}
        for kind in ("heapq", "frontier"):
            out = subprocess.run(
                [sys.executable, __file__, "--one", f"{kind}:{n}", "--updates", str(args.updates),
                 "--pops", str(args.pops), "--seed", str(args.seed)],
                check=True, capture_output=True, text=True,
            )
            pair[kind] = json.loads(out.stdout)
            rows.append(pair[kind])
            r = pair[kind]
            print(f"{kind:>8} n={n:>11,}  updates/s {r['updates_per_s']:>10,.0f}  pop mean {r['pop_us_mean']:6.2f} us"
                  f" p50 {r['pop_us_p50']:6.2f} us p99 {r['pop_us_p99']:6.2f} us  bytes/candidate {r['bytes_per_candidate']:6.1f}"
                  f" (after updates {r['bytes_per_candidate_after_updates']:6.1f})", flush=True)
        f, h = pair["frontier"], pair["heapq"]
        ratios = {
            "candidates": n,
            "updates_per_s_ratio": f["updates_per_s"] / h["updates_per_s"],
            "pop_latency_ratio": f["pop_us_p50"] / h["pop_us_p50"],
            "memory_ratio": f["bytes_per_candidate_after_updates"] / h["bytes_per_candidate_after_updates"],
        }
        rows.append({"structure": "ratio frontier/heapq", **ratios})
        print(f"   ratio n={n:>11,}  updates/s x{ratios['updates_per_s_ratio']:.2f}  pop latency (p50) x{ratios['pop_latency_ratio']:.2f}"
              f"  memory x{ratios['memory_ratio']:.2f}", flush=True)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "bench": "ranking",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "updates_timed": args.updates,
        "pops_timed": args.pops,
        "rows": rows,
    }, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
