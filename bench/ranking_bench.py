"""How the user ranking scales: updates/s, pop latency and memory at 1M (and 10M) candidates.

Seed 000 section II (complexity) and Algorithm 1: the ranking takes an update per post seen and
a pop per extracted user, whatever the number of candidates; updates outnumber pops by thousands.
Three structures, each (structure, size) in a fresh subprocess so its memory figures are its own:

- ``blocks``: ``BlockFrontier``, the chooser's (flat arrays, each block's best kept; O(1) updates);
- ``frontier``: ``PriorityFrontier``, the indexed binary heap the chooser used before;
- ``heapq``: the usual Python baseline, ``heapq`` of ``(-score, seq, key)`` tuples plus a dict of
  current entries, with lazy deletion (a changed score pushes a new tuple; stale ones are skipped
  at pop time).

Updates are timed in chunks and summarised by the median chunk, by wall clock and by the process's
CPU time (a shared machine: the CPU rate is the cost without the wait). Memory: the RSS growth per
candidate (key strings excluded: they are created before the baseline is read, the caller owns
them) and the process's peak RSS (``ru_maxrss``, key strings included: what a chooser of that
many candidates needs at least).

    python bench/ranking_bench.py                 # 1M candidates
    python bench/ranking_bench.py --sizes 1000000,10000000    # 10M too (minutes, ~4 GB for heapq)

Writes ``--out`` (default ``$FOCUSCRAWL_VAR/bench/ranking.json``) and prints the ratios.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from result_json import default_out, write_result

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


KINDS = ("heapq", "frontier", "blocks")


def make(kind: str):
    if kind == "frontier":
        from focuscrawl.core.frontier import PriorityFrontier

        return PriorityFrontier()
    if kind == "blocks":
        from focuscrawl.core.frontier import BlockFrontier

        return BlockFrontier()
    return LazyHeap()


def run_one(kind: str, n: int, updates: int, pops: int, seed: int) -> dict:
    rng = random.Random(seed)
    keys = [f"user_{i:09d}" for i in range(n)]
    targets = [keys[rng.randrange(n)] for _ in range(updates)]
    new_scores = [rng.random() for _ in range(updates)]
    import focuscrawl.core.frontier  # noqa: F401 - its imports (numpy) are not the structure's memory

    gc.collect()
    rss0 = rss_bytes()
    ranking = make(kind)
    t0 = time.perf_counter()
    for key in keys:
        ranking.update(key, rng.random())
    insert_s = time.perf_counter() - t0
    gc.collect()
    rss1 = rss_bytes()

    # Timed in chunks and summarised by the median chunk: robust to a busy, shared machine.
    chunk = max(1, updates // 50)
    rates, cpu_rates = [], []
    for start in range(0, updates, chunk):
        size = min(chunk, updates - start)
        c0, t0 = time.process_time(), time.perf_counter()
        for key, score in zip(targets[start:start + chunk], new_scores[start:start + chunk]):
            ranking.update(key, score)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rates.append(size / wall)
        if cpu > 0:
            cpu_rates.append(size / cpu)
    rates.sort()
    cpu_rates.sort()
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
        "cpu_updates_per_s": cpu_rates[len(cpu_rates) // 2] if cpu_rates else None,
        "updates_timed": updates,
        "pop_us_mean": sum(lat) / len(lat) / 1000,
        "pop_us_p50": lat[len(lat) // 2] / 1000,
        "pop_us_p99": lat[int(len(lat) * 0.99)] / 1000,
        "bytes_per_candidate": (rss1 - rss0) / n,
        "bytes_per_candidate_after_updates": (rss2 - rss0) / n,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000000", help="comma-separated candidate counts (add 10000000 for 10M)")
    ap.add_argument("--updates", type=int, default=500_000, help="score changes of existing candidates to time")
    ap.add_argument("--pops", type=int, default=100_000, help="pops to time")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"structures to run, of {', '.join(KINDS)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=default_out("ranking"))
    ap.add_argument("--one", help=argparse.SUPPRESS)  # child mode: "kind:n"
    args = ap.parse_args(argv)
    if args.one:
        kind, n = args.one.split(":")
        print(json.dumps(run_one(kind, int(n), args.updates, args.pops, args.seed)))
        return

    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        pair = {}
        for kind in [k for k in args.kinds.split(",") if k in KINDS]:
            out = subprocess.run(
                [sys.executable, __file__, "--one", f"{kind}:{n}", "--updates", str(args.updates),
                 "--pops", str(args.pops), "--seed", str(args.seed)],
                check=True, capture_output=True, text=True,
            )
            pair[kind] = json.loads(out.stdout)
            rows.append(pair[kind])
            r = pair[kind]
            print(f"{kind:>8} n={n:>11,}  updates/s {r['updates_per_s']:>10,.0f} (CPU {r['cpu_updates_per_s'] or 0:>10,.0f})"
                  f"  pop p50 {r['pop_us_p50']:6.2f} us p99 {r['pop_us_p99']:6.2f} us  bytes/candidate"
                  f" {r['bytes_per_candidate_after_updates']:6.1f}  peak RSS {r['peak_rss_mb']:,.0f} MB", flush=True)
        h = pair.get("heapq")
        for kind in ("frontier", "blocks"):
            f = pair.get(kind)
            if h is None or f is None:
                continue
            ratios = {
                "candidates": n,
                "updates_per_s_ratio": f["updates_per_s"] / h["updates_per_s"],
                "pop_latency_ratio": f["pop_us_p50"] / h["pop_us_p50"],
                "memory_ratio": f["bytes_per_candidate_after_updates"] / h["bytes_per_candidate_after_updates"],
            }
            rows.append({"structure": f"ratio {kind}/heapq", **ratios})
            print(f"   ratio {kind}/heapq n={n:>11,}  updates/s x{ratios['updates_per_s_ratio']:.2f}"
                  f"  pop latency (p50) x{ratios['pop_latency_ratio']:.2f}  memory x{ratios['memory_ratio']:.2f}",
                  flush=True)

    write_result(args.out, {
        "bench": "ranking",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "threads": {v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        "updates_timed": args.updates,
        "pops_timed": args.pops,
        "rows": rows,
    })


if __name__ == "__main__":
    main()
