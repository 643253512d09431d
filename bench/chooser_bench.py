"""How fast one chooser instance folds posts with HCP: posts/s, against re-vectorising (docs/benchmarks.md).

Seed 000 section III (User Updater, User Chooser) and IV-E (HCP): every post seen in a listing
updates its author's text, and HCP ranks the author by the classifier's probability of the text
seen so far (section IV-F: TF-IDF + L1 logistic regression, the reference classifier). One chooser
instance must fold its share of a site's stream as fast as the listings bring it.

Real posts: the eRisk 2017 writings (``--data erisk``, ``../shared/data/erisk2017``, 295k writings
of 486 users) in date order, the reference classifier fitted on the users' whole histories with
the paper's parameters; or the SDCNL posts (``--data sdcnl``, 1,895, dealt to 40 users; for the
smoke run). ``--warmup`` posts are folded first in listings of 100 by the product, and the
baseline restores the same state from its changelog records (``UserChooser.restore``), so the
timed posts meet users with texts already grown, up to the 20,000-character window; the ``--posts`` after them go one Kafka record at a time through ``ChooserStage.handle``,
what ``streaming/fue/chooser.py`` does per record (JSON decode, evidence, score, frontier), with
the changelog records (``ChooserStage.changes``: each changed user's state as JSON) taken after
every 500 records as its transactions do (Kafka itself excluded). Two choosers in the same run, on the same posts:

- ``incremental``: the product (``UserChooser``, ``IncrementalTextScorer``: term counts and two
  running sums per user, a post costs its own length);
- ``re-vectorising (baseline)``: the same chooser with ``incremental_text=False``, the classifier
  re-vectorising the author's whole text on every post, as before; timed on the first
  ``--baseline-posts`` of the timed posts (it is slow), where the product is timed too.

After the baseline's posts the two choosers' scores are compared (``max_score_difference``, which
must be float rounding). Rates are wall-clock and process CPU (a shared machine: the CPU rate is the
cost without the wait); peak RSS is the process's.

    python bench/chooser_bench.py [--data erisk] [--warmup 20000] [--posts 20000] [--baseline-posts 1000]

Writes ``--out`` (default ``$FOCUSCRAWL_VAR/bench/chooser.json``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import re
import resource
import sys
import tarfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from result_json import default_out, write_result

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_WRITING = re.compile(r"<WRITING>\s*<TITLE>(.*?)</TITLE>\s*<DATE>\s*([0-9: -]+?)\s*</DATE>.*?<TEXT>(.*?)</TEXT>", re.S)


@dataclass(frozen=True)
class Record:
    """The fields of a Kafka record ``ChooserStage.handle`` reads."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes
    value: bytes


def data_dir() -> Path:
    return Path(os.environ.get("FOCUSCRAWL_DATA", ROOT.parent / "shared" / "data"))


def erisk(path: Path) -> tuple[list[dict], list[str], list[int]]:
    """Every eRisk writing as a post (date order), and one whole-history document per user with its label."""
    posts, docs, labels = [], [], []
    with tarfile.open(path, "r:xz") as tar:
        for member in tar:
            if not (member.isfile() and member.name.endswith(".xml")):
                continue
            xml = tar.extractfile(member).read().decode("utf-8", errors="replace")
            user = Path(member.name).stem
            writings = []
            for m in _WRITING.finditer(xml):
                when = datetime.strptime(m.group(2), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
                writings.append((m.group(1).strip(), m.group(3).strip(), when))
            for j, (title, text, when) in enumerate(writings):
                posts.append({"author": user, "created_utc": when, "title": title, "text": text,
                              "post_id": f"{user}-{j}", "community": "erisk"})
            docs.append("\n".join(f"{t}\n{x}" if t and x else t or x for t, x, _ in writings))
            labels.append(int("positive_examples" in member.name))
    posts.sort(key=lambda p: (p["created_utc"], p["post_id"]))
    return posts, docs, labels


def sdcnl(path: Path, users: int = 40) -> tuple[list[dict], list[str], list[int]]:
    """The SDCNL posts dealt to ``users`` authors, and the posts themselves as the training set."""
    csv.field_size_limit(10**8)
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    rng = random.Random(0)
    posts = [{"author": f"u{rng.randrange(users)}", "created_utc": 1.6e9 + 60.0 * i, "title": r["title"],
              "text": r["selftext"], "post_id": f"p{i}", "community": "sdcnl",
              "num_comments": float(r["num_comments"] or 0)} for i, r in enumerate(rows)]
    return posts, [f"{r['title']}\n{r['selftext']}" for r in rows], [int(r["is_suicide"]) for r in rows]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_chooser(classifier, incremental: bool):
    import focuscrawl.fue.pipeline  # noqa: F401 - what ChooserStage.handle imports on its first record
    import focuscrawl.topics.priority  # noqa: F401
    from focuscrawl.fue import RANKING_METHODS, UserChooser
    from focuscrawl.fue.chooser import ChooserStage

    chooser = UserChooser(RANKING_METHODS.create("HCP", classifier=classifier), incremental_text=incremental)
    return ChooserStage(chooser, method="HCP", posts_topic="posts", stats_topic="stats", scores_topic="scores",
                        extract_topic="extract")


def fold(stage, records: list[Record], batch: int = 500) -> dict:
    """Hand ``records`` to the stage one by one and take its changelog records after every ``batch``
    (``TransactionalStage`` polls up to 500 records per transaction); wall and CPU time, per-record latency."""
    clock = time.perf_counter_ns
    lat = []
    changelog = 0
    cpu0, t0 = time.process_time(), time.perf_counter()
    for i, record in enumerate(records, start=1):
        t = clock()
        stage.handle(record)
        lat.append(clock() - t)
        if i % batch == 0 or i == len(records):
            changelog += sum(len(value) for _, value in stage.changes())
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    lat.sort()
    return {"posts": len(records), "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
            "changelog_bytes": changelog,
            "posts_per_s": len(records) / seconds, "cpu_posts_per_s": len(records) / cpu if cpu > 0 else None,
            "latency_us_p50": lat[len(lat) // 2] / 1000, "latency_us_p99": lat[int(len(lat) * 0.99)] / 1000}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", choices=("erisk", "sdcnl"), default="erisk")
    ap.add_argument("--warmup", type=int, default=20_000, help="posts folded first, in listings of 100")
    ap.add_argument("--posts", type=int, default=20_000, help="posts timed one record at a time")
    ap.add_argument("--baseline-posts", type=int, default=1_000, help="of those, the re-vectorising chooser's")
    ap.add_argument("--out", type=Path, default=default_out("chooser"))
    args = ap.parse_args(argv)
    from focuscrawl.fue import Post, UserClassifier

    t0 = time.perf_counter()
    if args.data == "erisk":
        posts, docs, labels = erisk(data_dir() / "erisk2017" / "erisk2017-train.tar.xz")
        params: dict = {}  # the paper's: min_df=20, English stop words, C=16, positive weight 4
        posts = posts[-(args.warmup + args.posts):]  # the latest: every user active
    else:
        posts, docs, labels = sdcnl(data_dir() / "sdcnl" / "combined-set.csv")
        params = {"min_df": 5}
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    classifier = UserClassifier(**params).fit(docs, labels)
    train_s = time.perf_counter() - t0
    print(f"{len(posts):,} {args.data} posts loaded in {load_s:.1f} s; classifier fitted in {train_s:.1f} s "
          f"({len(classifier.vectorizer_.vocabulary_):,} terms)", flush=True)
    warm = [Post(**{k: v for k, v in p.items()}) for p in posts[:args.warmup]]
    timed = posts[args.warmup:args.warmup + args.posts]
    if len(timed) < args.posts:
        raise SystemExit(f"only {len(timed)} posts after the warm-up; lower --warmup or --posts")
    base_ms = int(time.time() * 1000)
    records = [Record("posts", 0, i, base_ms + i, p["author"].encode(), json.dumps(p).encode())
               for i, p in enumerate(timed)]
    n_base = min(args.baseline_posts, len(records))

    stages = {name: make_chooser(classifier, incremental)
              for name, incremental in (("incremental", True), ("re-vectorising (baseline)", False))}
    t0 = time.perf_counter()
    for start in range(0, len(warm), 100):
        stages["incremental"].chooser.add_posts(warm[start:start + 100])
    # The baseline starts from the same state through the changelog path (UserChooser.restore), so it
    # does not re-vectorise the warm-up: only the timed posts differ between the two.
    stages["re-vectorising (baseline)"].chooser.restore(stages["incremental"].chooser.changes())
    print(f"warm-up of {len(warm):,} posts in {time.perf_counter() - t0:.1f} s", flush=True)

    fast, slow = stages["incremental"], stages["re-vectorising (baseline)"]
    rows = []
    same_posts = fold(fast, records[:n_base])
    rows.append({"scorer": "incremental", "part": f"first {n_base}", **same_posts})
    rows.append({"scorer": "re-vectorising (baseline)", "part": f"first {n_base}", **fold(slow, records[:n_base])})
    a, b = dict(fast.chooser._frontiers[0].items()), dict(slow.chooser._frontiers[0].items())
    if a.keys() != b.keys():
        raise SystemExit("the two choosers hold different candidates")
    difference = max((abs(a[u] - b[u]) for u in a), default=0.0)
    print(f"after {n_base} posts: {len(a):,} candidates, max |incremental - re-vectorised| = {difference:.2e}", flush=True)
    del slow, stages
    rest = fold(fast, records[n_base:]) if len(records) > n_base else None
    total = {"posts": len(records), "seconds": same_posts["seconds"] + (rest["seconds"] if rest else 0),
             "cpu_seconds": same_posts["cpu_seconds"] + (rest["cpu_seconds"] if rest else 0),
             "changelog_bytes": same_posts["changelog_bytes"] + (rest["changelog_bytes"] if rest else 0)}
    total["posts_per_s"] = total["posts"] / total["seconds"]
    total["cpu_posts_per_s"] = total["posts"] / total["cpu_seconds"] if total["cpu_seconds"] > 0 else None
    if rest:
        total["latency_us_p50"], total["latency_us_p99"] = rest["latency_us_p50"], rest["latency_us_p99"]
    rows.append({"scorer": "incremental", "part": "all", **total})
    for r in rows:
        print(f"{r['scorer']:>26} {r['part']:>12}: {r['posts']:>7,} posts {r['posts_per_s']:>9,.0f} posts/s "
              f"(CPU {r['cpu_posts_per_s'] or 0:>9,.0f}/s), p99 {r.get('latency_us_p99', 0):,.0f} us", flush=True)
    scorer = fast.chooser.method.classifier
    texts = [len(fast.chooser.evidence.get(u).text) for u in list(fast.chooser.evidence.users())]
    out = {
        "bench": "chooser", "method": "HCP", "data": args.data, "warmup_posts": len(warm), "timed_posts": len(records),
        "baseline_posts": n_base, "candidates": len(fast.chooser), "mean_text_chars": sum(texts) / max(len(texts), 1),
        "max_text_chars": fast.chooser.evidence.max_text_chars, "vocabulary": len(classifier.vectorizer_.vocabulary_),
        "load_seconds": round(load_s, 1), "train_seconds": round(train_s, 1),
        "max_score_difference": difference, "followed": scorer.followed, "revectorised": scorer.revectorised,
        "peak_rss_mb": round(peak_rss_mb(), 1), "threads": {v: os.environ.get(v) for v in THREAD_VARS},
        "python": platform.python_version(), "cpus": os.cpu_count(), "load": [round(x, 2) for x in os.getloadavg()],
        "rows": rows,
    }
    write_result(args.out, out)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "include"))
    main()
