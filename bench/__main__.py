"""One benchmark command (docs/benchmarks.md): every benchmark with its baselines, in one run.

    python -m bench                 # quick (make bench): minutes
    python -m bench --full          # the papers' scales (make bench FULL=1): an hour or more on 2 cores
    python -m bench --smoke --out DIR --only knn,ranking   # seconds: what make test runs so they cannot rot

Each benchmark runs as its own process (``bench/<name>_bench.py``) with its baselines measured in the
same run (FAISS flat, scikit-learn brute, the previous hand-written search, Spark BRP LSH on a subset;
heapq and the previous indexed heap; the re-vectorising HCP scorer; raw Kafka produce/consume; a static
HTTP handler). Threads are pinned for every one of them
(``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``: ``--threads``, default 1, so one
library is not measured with two cores against another with one); the machine's load before and after
each benchmark and the commit are recorded. Writes ``<out>/<mode>/<name>.json`` per benchmark and
``<out>/bench-<mode>.json`` plus ``<out>/bench-<mode>.md`` (the README's performance table).

Results under ``bench/results/`` are published: a run from a tree with uncommitted changes is refused
there unless ``--draft`` (recorded in the report), so every number names a commit anyone can check out.

``--only`` runs a subset and keeps the other benchmarks' records of the previous report of that mode
(each record names its own commit and start, so the table says which ran when).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from focuscrawl.experiments.run_record import add_draft_argument, git_commit, refuse_unpublishable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# name -> (script, needs, {mode: arguments}); "needs" says which engines a benchmark starts itself.
BENCHES: dict[str, tuple[str, str, dict[str, list[str]]]] = {
    "knn": ("knn_bench.py", "Spark (local[2], spark-submit)", {
        "smoke": ["--n", "1500", "--data", "synthetic", "--spark-n", "0", "--job", "", "--ef-search", "32",
                  "--probes", "8"],
        "quick": ["--n", "20000", "--spark-n", "1000", "--job", "EXACT:20000,HNSW:20000"],
        # HNSW's search width written out: the knob its docstring justifies (related.HnswRelatedPages)
        "full": ["--n", "100000", "--spark-n", "5000", "--job", "EXACT:384000,HNSW:1000000:--ef-search=96"],
    }),
    # The product's exact search against FAISS flat and the tiles in one run, min of interleaved repeats
    "knn_exact": ("knn_exact_bench.py", "none (real posts from ../shared/data)", {
        "smoke": ["--n", "500,1500", "--data", "synthetic", "--repeats", "1", "--no-as-installed"],
        "quick": ["--n", "20000"],
        "full": ["--n", "20000,100000", "--repeats", "2", "--plot", "bench/results/knn_exact.png"],
    }),
    # outlinks_train's fitting loop: one core against all usable ones, same models, in one run
    "fits": ("fits_bench.py", "none", {
        "smoke": ["--pages", "400", "--periods", "8", "--n-estimators", "10"],
        "quick": ["--pages", "10000", "--periods", "10"],
        "full": ["--pages", "384000", "--periods", "10"],
    }),
    # the outlinks_features steps on pandas in the job's process against a warm local Spark, in one run
    "in_process": ("in_process_bench.py", "Spark (local[2], in the benchmark's process)", {
        "smoke": ["--rows", "400", "--spark-rows", ""],
        "quick": ["--rows", "400,4000,20000"],
        "full": ["--rows", "400,4000,20000,100000"],
    }),
    "ranking": ("ranking_bench.py", "none", {
        "smoke": ["--sizes", "20000", "--updates", "5000", "--pops", "1000"],
        "quick": ["--sizes", "1000000", "--updates", "200000", "--pops", "50000"],
        "full": ["--sizes", "1000000,10000000"],
    }),
    "chooser": ("chooser_bench.py", "none (real posts from ../shared/data)", {
        "smoke": ["--data", "sdcnl", "--warmup", "200", "--posts", "300", "--baseline-posts", "50"],
        "quick": ["--data", "erisk", "--warmup", "20000", "--posts", "20000", "--baseline-posts", "1000"],
        "full": ["--data", "erisk", "--warmup", "100000", "--posts", "150000", "--baseline-posts", "3000"],
    }),
    "world": ("world_bench.py", "none", {
        "smoke": ["--seconds", "0.5", "--users", "2000", "--data", "none"],
        "quick": ["--seconds", "3"],
        "full": ["--seconds", "10"],
    }),
    "ingest": ("ingest_bench.py", "Kafka broker, world (started when not up)", {
        "smoke": ["--seconds", "3", "--warmup", "2", "--raw-records", "500", "--backlog", "1500"],  # >1 commit
        "quick": ["--seconds", "20", "--raw-records", "5000", "--backlog", "3000"],
        "full": ["--long", "--backlog", "10000"],
    }),
    "latency": ("latency_bench.py", "Kafka broker, world, FUE explorer and chooser processes", {
        "smoke": ["--seconds", "5", "--drain", "10"],
        "quick": ["--seconds", "60", "--method", "HCP"],
        "full": ["--seconds", "300", "--method", "HCP", "--classifier-data", "erisk"],
    }),
    "train": ("train_bench.py", "Spark (local[2], spark-submit)", {
        # smoke: the comparison only, its sample the share of 384k pages' rows the job's sample is (the
        # two jobs' smoke is tests/bench's integration test); quick: a sample below its 80k training rows
        "smoke": ["--no-job", "--pages", "384000", "--embed-pages", "0", "--periods", "8", "--compare-pages", "300"],
        "quick": ["--pages", "20000", "--train-sample", "20000", "--compare-pages", "20000", "--embed-pages", "50000"],
        "full": ["--pages", "384000", "--periods", "10", "--compare-pages", "100000", "--embed-pages", "384000"],
    }),
    "hygiene": ("hygiene_bench.py", "world (in process, over HTTP)", {
        "smoke": ["--budget", "200", "--data", "none"],
        "quick": ["--budget", "1500"],
        "full": ["--budget", "6000", "--periods", "3"],
    }),
    "scaling": ("scaling_bench.py", "Kafka broker, world, Spark standalone cluster", {
        "smoke": ["--backlog", "200", "--posts", "200", "--users", "50", "--pages", "300"],
        "quick": ["--backlog", "3000", "--posts", "3000", "--users", "1000", "--pages", "3000"],
        "full": ["--backlog", "10000", "--posts", "20000", "--pages", "20000"],
    }),
}


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def versions() -> dict:
    out = {"python": platform.python_version()}
    for mod in ("numpy", "faiss", "sklearn", "pyspark"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception as exc:  # a missing library is recorded, not fatal
            out[mod] = f"unavailable ({type(exc).__name__})"
    return out


def run_bench(name: str, mode: str, out_dir: Path, env: dict, timeout: float) -> dict:
    script, needs, modes = BENCHES[name]
    out = out_dir / f"{name}.json"
    command = [sys.executable, str(HERE / script), *modes[mode], "--out", str(out)]
    before = load()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    start = time.perf_counter()
    print(f"== {name} ({mode}): {' '.join(command[1:])}", flush=True)
    done = subprocess.run(command, cwd=ROOT, env=env, timeout=timeout)
    record = {"script": f"bench/{script}", "arguments": modes[mode], "needs": needs, "commit": git_commit(ROOT),
              "started": started,
              "seconds": round(time.perf_counter() - start, 1), "load_before": before, "load_after": load(),
              "returncode": done.returncode, "result": str(out.relative_to(out_dir.parent))}
    if done.returncode == 0 and out.exists():
        record["rows"] = summarise(name, json.loads(out.read_text()))
    return record


def summarise(name: str, res: dict) -> list[dict]:
    """Table rows of one benchmark's JSON: what, n, seconds, rate with its unit, recall, note."""
    if name in ("knn", "knn_exact", "fits", "train", "hygiene", "in_process"):
        sys.path.insert(0, str(HERE))
        return __import__(f"{name}_bench").summary(res)
    rows: list[dict] = []

    def row(what, n, seconds, rate, unit, note="", recall=None):
        rows.append({"what": what, "n": n, "seconds": seconds, "rate": rate, "unit": unit, "recall": recall,
                     "note": note})

    if name == "ranking":
        labels = {"blocks": "BlockFrontier", "frontier": "PriorityFrontier (previous)",
                  "heapq": "heapq + dict (baseline)"}
        for r in res["rows"]:
            if "updates_per_s" in r:
                cpu = r.get("cpu_updates_per_s")
                note = (f"CPU rate {cpu:,.0f}/s, " if cpu else "") + (
                    f"pop p99 {r['pop_us_p99']:.0f} us, {r['bytes_per_candidate_after_updates']:.0f} B/candidate")
                if "peak_rss_mb" in r:
                    note += f", peak RSS {r['peak_rss_mb']:,.0f} MB"
                row(f"ranking updates, {labels[r['structure']]}", r["candidates"], None, r["updates_per_s"],
                    "updates/s", note)
    elif name == "chooser":
        for r in res["rows"]:
            row(f"chooser HCP posts folded, {r['scorer']} ({r['part']} timed posts)", r["posts"], r["seconds"],
                r["posts_per_s"], "posts/s",
                f"CPU rate {r['cpu_posts_per_s']:,.0f}/s, p99 {r.get('latency_us_p99', 0):,.0f} us/post, "
                f"{res['data']}, {res['candidates']:,} users, max score diff {res['max_score_difference']:.1e}, "
                f"peak RSS {res['peak_rss_mb']:,.0f} MB")
            rows[-1]["cpu_seconds"] = r["cpu_seconds"]
    elif name == "world":
        for key, r in sorted(res.items()):
            if isinstance(r, dict) and "rps" in r:
                row(f"world {key.replace('_', ' ')}", r["requests"], r["seconds"], r["rps"], "requests/s",
                    f"{r.get('ratio_to_static', 1.0):.2f} x static handler")
    elif name == "ingest":
        raw = res["raw_kafka"]
        row("raw Kafka produce (baseline)", raw["produce"]["records"], raw["produce"]["seconds"],
            raw["produce"]["records_per_s"], "records/s", "kafka-python, idempotent, acks=all")
        row("raw Kafka consume (baseline)", raw["consume"]["records"], raw["consume"]["seconds"],
            raw["consume"]["records_per_s"], "records/s")
        p = res["pipeline"]
        row("ingest crawler -> Kafka -> Delta", p["records"], p["seconds"], p["records_per_s"], "records/s",
            f"unpaced (as fast as the crawler re-reads the world), lag p50 {p['lag_p50_s']} s, p99 {p['lag_p99_s']} s")
        q = res.get("paced")
        if q:
            row(f"ingest paced {q['rate']:,.0f} records/s -> Kafka -> Delta", q["rows"], q["seconds"],
                q["offered_records_per_s"], "records/s",
                f"lag p50 {q['lag_s']['p50']} s, p99 {q['lag_s']['p99']} s; batch wait p99 {q['batch_wait_s']['p99']} s, "
                f"then to the commit p99 {q['commit_after_batch_s']['p99']} s (delta-rs write p99 "
                f"{q['write_execution_ms']['p99']} ms); {q['commits']} commits, {q['files_per_commit']} files of "
                f"{q['file_kb']['p50']} KB (p50) each")
        for key in ("consumers_1", "consumers_2"):
            c = res["scaling"][key]
            row(f"ingest backlog, {key.replace('_', ' ')}", c["records"], c["seconds"], c["records_per_s"],
                "records/s")
    elif name == "latency":
        period = res["poll"]["all_new_period_s"]
        for part in ("posts", "comments"):
            p = res[part]
            if not p["ranked"]:
                continue
            lat, fetch, rank = p["latency_s"], p["listing_to_fetch_s"], p["fetch_to_rank_s"]
            row(f"evidence latency, {part} listed -> author re-ranked ({res['method']})", p["ranked"],
                res["window_seconds"], p["ranked"] / res["window_seconds"], f"{part}/s",
                f"latency p50 {lat['p50']} s, p90 {lat['p90']} s, p99 {lat['p99']} s, max {lat['max']} s; "
                f"listing->fetch p50 {fetch['p50']}/p99 {fetch['p99']} s, fetch->rank p50 {rank['p50']}/p99 "
                f"{rank['p99']} s; /r/all/new polled every {period.get('mean')} s (front_page_interval "
                f"{res['poll']['front_page_interval_s']} s: bounds listing->fetch from below); "
                f"{p['listed']} listed, {p['fetched']} fetched")
            rows[-1]["cpu_seconds"] = round(sum(v for v in res["cpu_seconds"].values() if v), 2)
    elif name == "scaling":
        for part, unit, rate in (("ingest", "records/s", "records_per_s"), ("chooser", "posts/s", "posts_per_s")):
            for key, c in res.get(part, {}).items():
                if isinstance(c, dict) and rate in c:
                    row(f"scaling {part}, {key.replace('_', ' ')}", c.get("records", c.get("posts")), c["seconds"],
                        c[rate], unit)
        for key, c in res.get("spark", {}).items():
            if isinstance(c, dict) and "pages_per_s" in c:
                row(f"scaling Spark related pages, {key.replace('_', ' ')}", res["spark"]["pages"],
                    c["submit_seconds"], c["pages_per_s"], "pages/s", "standalone cluster, spark-submit")
    return rows


def fmt(v, digits=2) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def markdown(report: dict) -> str:
    """The report as Markdown: one table per benchmark, headed by the run it comes from (its commit, start,
    load), so no table mixes commits; a benchmark's baselines are rows of its own table, measured in its run."""
    m = report["machine"]
    lines = [f"# Benchmarks ({report['mode']})", "",
             f"`python -m bench{' --full' if report['mode'] == 'full' else ''}`, last run at {report['started']}, "
             f"commit `{(report['commit']['commit'] or '?')[:10]}` ({report['commit']['dirty_files']} files modified), "
             f"{m['cpus']} CPUs, threads {', '.join(f'{k}={v}' for k, v in report['threads'].items())}, "
             f"load average (1/5/15 min) {m['load_start']} at start, {m['load_end']} at end "
             "(the machine is shared: timings under load are longer than on an idle machine; CPU s is the "
             "benchmark process's own CPU time, all threads, where it measured it: the cost without the wait)."
             + (f" This run measured {', '.join(report['ran'])} only; {', '.join(report['kept'])} are kept from "
                "earlier runs." if report.get("kept") else "")
             + " Each table below comes from one run of one benchmark at one commit, which its heading gives."]
    for name, b in report["benchmarks"].items():
        own = b.get("commit") or report["commit"]
        lines += ["", f"## {name}", "",
                  f"`{b.get('script', '')} {' '.join(b.get('arguments', []))}` at commit "
                  f"`{(own['commit'] or '?')[:10]}` ({own.get('dirty_files', 0)} files modified), started "
                  f"{b.get('started', report['started'])}, {b.get('seconds', 0)} s, load {b.get('load_before')} -> "
                  f"{b.get('load_after')}.", "",
                  "| benchmark | what | n | seconds | CPU s | rate | unit | recall@30 | note |",
                  "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | --- |"]
        if "rows" not in b:
            why = b.get("skipped") or f"failed (exit {b.get('returncode')}); see its log"
            lines.append(f"| {name} | {why} | | | | | | | |")
            continue
        for r in b["rows"]:
            lines.append(f"| {name} | {r['what']} | {fmt(r['n'])} | {fmt(r['seconds'], 1)} | "
                         f"{fmt(r.get('cpu_seconds'), 2)} | {fmt(r['rate'], 1)} | "
                         f"{r['unit']} | {fmt(r['recall'], 3)} | {r['note']} |")
    return "\n".join(lines) + "\n"


def mode_of(args) -> str:
    return "full" if args.full else "smoke" if args.smoke else "quick"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--full", action="store_true", help="the papers' scales (an hour or more)")
    group.add_argument("--smoke", action="store_true", help="seconds: each benchmark at toy sizes")
    ap.add_argument("--only", default=",".join(BENCHES), help=f"comma-separated subset of {', '.join(BENCHES)}")
    ap.add_argument("--threads", type=int, default=1, help="OpenBLAS/OpenMP/MKL threads of every benchmark")
    ap.add_argument("--timeout", type=float, default=4 * 3600, help="seconds one benchmark may take")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--override", action="append", default=[], metavar="NAME=ARGS",
                    help="replace one benchmark's arguments for this mode (recorded in the report), "
                         "e.g. knn='--n 0 --job EXACT:384000'")
    add_draft_argument(ap)
    args = ap.parse_args(argv)
    code = git_commit(ROOT)
    refuse_unpublishable(args.out, code, args.draft,
                         out_flag="--out")
    for item in args.override:
        name, _, extra = item.partition("=")
        if name not in BENCHES:
            ap.error(f"--override {item!r}: unknown benchmark {name!r}; known: {', '.join(BENCHES)}")
        BENCHES[name][2][mode_of(args)] = shlex.split(extra)
    mode = mode_of(args)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(names) - set(BENCHES))
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHES)}")
    threads = {v: str(args.threads) for v in THREAD_VARS}
    env = {**os.environ, **threads, "PYTHONUNBUFFERED": "1"}
    out_dir = args.out / mode
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {"mode": mode, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "commit": code, "draft": args.draft, "threads": threads,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_start": load(),
                          "nice": os.nice(0), **versions()},
              "benchmarks": {}}
    previous = args.out / f"bench-{mode}.json"
    if set(names) != set(BENCHES) and previous.exists():
        # A subset: the other benchmarks keep their records of the previous report (with its commit
        # and start when the record has none of its own), in the table's order.
        old = json.loads(previous.read_text())
        for name in BENCHES:
            if name in names:
                report["benchmarks"][name] = {"skipped": "not run yet"}
            elif name in old.get("benchmarks", {}):
                kept = report["benchmarks"][name] = old["benchmarks"][name]
                kept.setdefault("commit", old.get("commit"))
                kept.setdefault("started", old.get("started"))
                report.setdefault("kept", []).append(name)
        report["ran"] = names
    for name in names:
        try:
            report["benchmarks"][name] = run_bench(name, mode, out_dir, env, args.timeout)
        except subprocess.TimeoutExpired:
            report["benchmarks"][name] = {"skipped": f"timed out after {args.timeout:.0f} s"}
        # Written after every benchmark, so a run stopped half-way keeps what it measured.
        report["machine"]["load_end"] = load()
        report["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        (args.out / f"bench-{mode}.json").write_text(json.dumps(report, indent=1))
        (args.out / f"bench-{mode}.md").write_text(markdown(report))
    print(markdown(report))
    failed = [n for n in names if "rows" not in report["benchmarks"][n]]
    if failed:
        print(f"failed: {', '.join(failed)} (their exit codes are in bench-{mode}.json)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
