"""Related-pages benchmark (issue 5, point 5; seed 002 Section 7: the KNN step took six hours there).

    python bench/knn_bench.py [--n 100000] [--data erisk|synthetic] [--million] [--spark-n 20000] [--out bench/results/knn.json]

On the same unit-length vectors, for k=30 related pages of every page, in one run. The vectors are,
by default, focuscrawl's own LSA embedding (d=100, ``LsaEmbedder``) of ``--n`` distinct real Reddit
writings (eRisk 2017, ``../shared/data``): real text has no clean clusters, so recall is not flattered.
``--data synthetic`` uses a mixture of topic clusters instead (easy: at 100k vectors every page's 30
neighbours share its cluster and IVF finds all of them with 8 probes).

- ``blas_bound``: the matrix products alone (every block of queries times all vectors, results dropped):
  what any exact brute force must at least spend;
- ``ours_exact``: focuscrawl's blocked BLAS + argpartition search;
- ``ours_ivf``: focuscrawl's inverted file at a few probe counts (recall measured against exact);
- ``sklearn_brute``: scikit-learn's NearestNeighbors(algorithm="brute", metric="cosine");
- ``spark_brp_lsh``: Spark ML BucketedRandomProjectionLSH.approxSimilarityJoin (self-join under a
  distance threshold, then the top 30 per page); it runs on ``--spark-n`` pages because a self-join
  on all of them does not fit a few minutes on this machine; its pages/s is compared per page.

Prints time, pages/s, recall@30 and the ratios the issue asks for; writes JSON with the machine's numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from focuscrawl.outlinks.embedding import normalise_rows
from focuscrawl.outlinks.related import ExactRelatedPages, IvfRelatedPages, recall_at_k

K = 30


def vectors(n: int, d: int = 100, topics: int = 1000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, d)).astype(np.float32)
    x = centres[rng.integers(0, topics, n)] + 0.35 * rng.normal(size=(n, d)).astype(np.float32)
    return normalise_rows(x)


def erisk_vectors(n: int, d: int = 100, seed: int = 0) -> np.ndarray:
    """LSA vectors of ``n`` distinct real writings (title and text, 40+ characters), sampled at random."""
    from focuscrawl.config import settings
    from focuscrawl.outlinks.embedding import LsaEmbedder
    from focuscrawl.world import load_corpus
    from focuscrawl.world.corpus import EriskCorpus

    cfg = settings()
    corpus = load_corpus(seed, cfg.data_dir, Path(cfg.var_dir))
    if not isinstance(corpus, EriskCorpus):
        raise SystemExit(f"no eRisk data under {cfg.data_dir} (set FOCUSCRAWL_DATA to ../shared/data) "
                         "or pass --data synthetic")
    texts = sorted({f"{title} {text}".strip() for label in (True, False) for donor in range(corpus.donors(label))
                    for title, text, _ in (corpus.writing(label, donor, j) for j in range(corpus.size(label, donor)))}
                   - {""})
    texts = [t for t in texts if len(t) >= 40]
    if len(texts) < n:
        raise SystemExit(f"only {len(texts)} distinct writings of 40+ characters: pass --n {len(texts)} or less")
    sample = [texts[i] for i in np.random.default_rng(seed).choice(len(texts), size=n, replace=False)]
    vectors_, secs = timed(lambda: LsaEmbedder(dimensions=d, seed=seed).fit_transform(sample), f"LSA of {n} writings")
    return vectors_.astype(np.float32)


def timed(fn, label: str = ""):
    """``(fn(), seconds)``; with a label, the time is printed as soon as it is known (long runs show progress)."""
    start = time.perf_counter()
    out = fn()
    secs = time.perf_counter() - start
    if label:
        print(f"  .. {label}: {secs:.1f} s", flush=True)
    return out, secs


def blas_bound(x: np.ndarray, block: int = 2048) -> float:
    def run():
        for s in range(0, len(x), block):
            x[s:s + block] @ x.T

    return timed(run, f"BLAS bound n={len(x)}")[1]


def sklearn_brute(x: np.ndarray) -> tuple[np.ndarray, float]:
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=K + 1, algorithm="brute", metric="cosine", n_jobs=1).fit(x)
    (_, idx), secs = timed(lambda: nn.kneighbors(x), f"sklearn brute n={len(x)}")
    return idx[:, 1:], secs


def spark_lsh(x: np.ndarray, exact: np.ndarray) -> dict:
    """Spark ML's approximate self-join, thresholded at the 95th percentile of exact 30th-neighbour distances."""
    from pyspark.ml.feature import BucketedRandomProjectionLSH
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from focuscrawl.spark import get_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = get_session("knn_bench", master="local[2]")
    kth = np.linalg.norm(x - x[exact[:, -1]], axis=1)
    threshold = float(np.quantile(kth, 0.95))
    df = spark.createDataFrame([(i, Vectors.dense(v.tolist())) for i, v in enumerate(x)], ["id", "features"])
    df = df.repartition(4).cache()
    df.count()

    def run():
        model = BucketedRandomProjectionLSH(inputCol="features", outputCol="hashes", bucketLength=threshold,
                                            numHashTables=3, seed=0).fit(df)
        pairs = model.approxSimilarityJoin(df, df, threshold, distCol="dist").select(
            F.col("datasetA.id").alias("a"), F.col("datasetB.id").alias("b"), "dist").where("a != b")
        w = Window.partitionBy("a").orderBy("dist")
        return pairs.withColumn("r", F.row_number().over(w)).where(f"r <= {K}").select("a", "b").toPandas()

    top, secs = timed(run, f"Spark BRP LSH n={len(x)}")
    approx = np.full((len(x), K), -1, dtype=np.int64)
    for a, group in top.groupby("a"):
        approx[a, :len(group)] = group["b"].to_numpy()
    spark.stop()
    return {"n": len(x), "seconds": secs, "pages_per_s": len(x) / secs, "recall": recall_at_k(approx, exact),
            "threshold": threshold, "hash_tables": 3}


def run(n: int, spark_n: int, probes: list[int], with_sklearn: bool = True, data: str = "erisk") -> dict:
    x = erisk_vectors(n) if data == "erisk" else vectors(n)
    res: dict = {"n": n, "d": x.shape[1], "k": K, "data": data}
    res["blas_bound"] = {"seconds": blas_bound(x)}
    (exact, _), secs = timed(lambda: ExactRelatedPages(k=K).fit(x).search(x, np.arange(n)), f"ours EXACT n={n}")
    res["ours_exact"] = {"seconds": secs, "recall": 1.0}
    res["ours_ivf"] = []
    ivf, fit_secs = timed(lambda: IvfRelatedPages(k=K).fit(x), f"ours IVF fit n={n}")
    for n_probe in probes:
        ivf.n_probe = n_probe  # the cells do not depend on how many a query probes: one fit serves all
        (approx, _), secs = timed(lambda: ivf.search(x, np.arange(n)), f"ours IVF n_probe={n_probe} n={n}")
        res["ours_ivf"].append({"n_probe": n_probe, "n_lists": len(ivf.lists_), "fit_seconds": fit_secs,
                                "seconds": fit_secs + secs, "recall": recall_at_k(approx, exact)})
    if with_sklearn:
        idx, secs = sklearn_brute(x)
        res["sklearn_brute"] = {"seconds": secs, "recall": recall_at_k(idx, exact)}
    if spark_n:
        sub = x[:spark_n]
        sub_exact, _ = ExactRelatedPages(k=K).fit(sub).search(sub, np.arange(len(sub)))
        res["spark_brp_lsh"] = spark_lsh(sub, sub_exact)
    for key in ("blas_bound", "ours_exact", "sklearn_brute"):
        if key in res:
            res[key]["pages_per_s"] = n / res[key]["seconds"]
    for r in res["ours_ivf"]:
        r["pages_per_s"] = n / r["seconds"]
    good = [r for r in res["ours_ivf"] if r["recall"] >= 0.95]
    best = max(good, key=lambda r: r["pages_per_s"]) if good else max(res["ours_ivf"], key=lambda r: r["recall"])
    res["ratios"] = {
        "exact_over_blas_bound_time": res["ours_exact"]["seconds"] / res["blas_bound"]["seconds"],
        "ivf_best_at_recall_0.95": best,
        "sklearn_over_exact_time": res["sklearn_brute"]["seconds"] / res["ours_exact"]["seconds"]
        if "sklearn_brute" in res else None,
        "ivf_speedup_over_spark_lsh_pages_per_s": best["pages_per_s"] / res["spark_brp_lsh"]["pages_per_s"]
        if "spark_brp_lsh" in res else None,
        "exact_speedup_over_spark_lsh_pages_per_s": res["ours_exact"]["pages_per_s"]
        / res["spark_brp_lsh"]["pages_per_s"] if "spark_brp_lsh" in res else None,
    }
    return res


def report(res: dict) -> str:
    lines = [f"n={res['n']} d={res['d']} k={res['k']} vectors={res.get('data', 'synthetic')}"]

    def line(name, r):
        lines.append(f"  {name:<26} {r['seconds']:9.2f} s {r['pages_per_s']:12.0f} pages/s"
                     + (f"  recall@30 {r['recall']:.3f}" if "recall" in r else ""))

    line("BLAS bound (matmul only)", res["blas_bound"])
    line("ours EXACT", res["ours_exact"])
    for r in res["ours_ivf"]:
        line(f"ours IVF n_probe={r['n_probe']}", r)
    if "sklearn_brute" in res:
        line("sklearn brute", res["sklearn_brute"])
    if "spark_brp_lsh" in res:
        line(f"Spark BRP LSH (n={res['spark_brp_lsh']['n']})", res["spark_brp_lsh"])
    for key, value in res["ratios"].items():
        if isinstance(value, float):
            lines.append(f"  {key}: {value:.2f}")
        elif isinstance(value, dict):
            lines.append(f"  {key}: n_probe={value['n_probe']} recall={value['recall']:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--data", choices=("erisk", "synthetic"), default="erisk", help="where the vectors come from")
    ap.add_argument("--million", action="store_true", help="also 1M synthetic vectors (ours only; tens of minutes here)")
    ap.add_argument("--spark-n", type=int, default=20_000, help="pages for the Spark LSH self-join (0: skip)")
    ap.add_argument("--probes", default="8,16,32", help="IVF probe counts to measure")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "knn.json")
    args = ap.parse_args(argv)
    probes = [int(p) for p in args.probes.split(",")]
    runs = [run(args.n, args.spark_n, probes, data=args.data)]
    if args.million:
        runs.append(run(1_000_000, 0, probes, with_sklearn=False, data="synthetic"))
    for r in runs:
        print(report(r))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                                "numpy": np.__version__, "load_avg_1m": os.getloadavg()[0],
                                                "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default")},
                                    "runs": runs}, indent=1))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
