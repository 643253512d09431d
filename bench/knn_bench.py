"""Related-pages benchmark (docs/benchmarks.md; seed 002 Section 7: the KNN step took six hours there).

    python bench/knn_bench.py [--n 20000] [--data erisk|synthetic] [--spark-n 2000]
                              [--job EXACT:20000,HNSW:20000] [--out $FOCUSCRAWL_VAR/bench/knn.json]

Two parts, on unit-length vectors, k=30 related pages of every page, all in one run:

1. In process, on the same ``--n`` vectors (by default focuscrawl's own LSA embedding, d=100, of ``--n``
   distinct real Reddit writings, eRisk 2017 in ``../shared/data``: real text has no clean clusters, so
   recall is not flattered; ``--data synthetic`` is a mixture of topic clusters, much easier):

   - ``blas_bound``: the matrix products alone (results dropped): what any exact brute force must spend;
   - ``faiss_flat``: FAISS ``IndexFlatIP.search`` called directly: the floor for an exact answer, with
     FAISS's bundled OpenBLAS on this CPU's kernels (``OPENBLAS_CORETYPE``, pinned by
     ``focuscrawl.core.blas`` when this process starts, as the product's job does); ``blas_kernels``
     records what each loaded OpenBLAS chose;
   - ``faiss_flat_as_installed``: the same in a process of its own without the pin (faiss-cpu 1.15.1
     ships OpenBLAS 0.3.15, which runs generic kernels on this CPU);
   - ``EXACT``, ``HNSW`` (at a few ``ef_search``), ``IVF`` (at a few ``n_probe``): the registered methods
     (``focuscrawl.outlinks.related``), build included in their time, recall@30 against exact;
   - ``tiled_exact``, ``handwritten_ivf``: the hand-written searches FAISS replaced (``bench/handwritten_knn.py``);
   - ``sklearn_brute``: scikit-learn's ``NearestNeighbors(algorithm="brute", metric="cosine")``;
   - ``spark_brp_lsh``: Spark ML ``BucketedRandomProjectionLSH.approxSimilarityJoin`` on the first
     ``--spark-n`` pages (a self-join on all of them does not fit minutes here), compared per page.

2. Through the Spark job (``spark-submit spark_jobs/outlinks_related.py``, the command Airflow runs), one
   run per ``--job METHOD:N``: N synthetic vectors written as ``page_embeddings`` to a scratch lake, the
   job's wall time (session start, read, index build, search, Delta write of N x 30 rows), pages/s, and
   recall@30 against FAISS flat on a sample of ``--recall-sample`` queries read back from the table.

Threads are whatever the caller pinned (``python -m bench`` pins OPENBLAS/OMP to 1 for part 1); the Spark
job gets ``--job-threads`` for the driver's index build and one FAISS thread per task.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import handwritten_knn  # noqa: E402  (the baseline, beside this file)
from result_json import default_out, write_result  # noqa: E402

from focuscrawl.core.blas import openblas_kernels, pin_openblas_kernels  # noqa: E402
from focuscrawl.outlinks.embedding import normalise_rows  # noqa: E402
from focuscrawl.outlinks.params import DEFAULT as OUTLINKS  # noqa: E402
from focuscrawl.outlinks.related import RELATED, recall_at_k  # noqa: E402

K = OUTLINKS.k
ROOT = Path(__file__).resolve().parents[1]


def vectors(n: int, d: int = 100, topics: int = 1000, noise: float = 0.35, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.empty((n, d), dtype=np.float32)
    centres = rng.normal(size=(topics, d)).astype(np.float32)
    for s in range(0, n, 100_000):  # in chunks: 1M x 100 float64 noise would be 800 MB
        m = min(100_000, n - s)
        x[s:s + m] = centres[rng.integers(0, topics, m)] + noise * rng.normal(size=(m, d)).astype(np.float32)
    return normalise_rows(x)


def erisk_vectors(n: int, d: int = 100, seed: int = 0) -> tuple[np.ndarray, float]:
    """LSA vectors of ``n`` distinct real writings (title and text, 40+ characters), and the LSA's seconds."""
    from focuscrawl.config import settings
    from focuscrawl.outlinks.embedding import LsaEmbedder
    from focuscrawl.core.corpora import EriskCorpus, load_corpus

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
    out, secs = timed(lambda: LsaEmbedder(dimensions=d, seed=seed).fit_transform(sample), f"LSA of {n} writings")
    return normalise_rows(out), secs


def timed(fn, label: str = ""):
    """``(fn(), seconds)``; with a label, the time is printed as soon as it is known (long runs show progress)."""
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    secs = time.perf_counter() - start
    timed.cpu = time.process_time() - cpu  # this process's CPU seconds (all threads): the cost without the wait
    if label:
        print(f"  .. {label}: {secs:.1f} s (CPU {timed.cpu:.1f} s)", flush=True)
    return out, secs


timed.cpu = 0.0


def entry(pages: int, secs: float, recall: float | None = None, cpu: float | None | str = "last", **params) -> dict:
    """One measurement; ``cpu`` defaults to the CPU seconds of the last ``timed`` call (None: not this process's)."""
    cpu = timed.cpu if cpu == "last" else cpu
    out = {"seconds": secs, "cpu_seconds": cpu, "pages_per_s": pages / secs if secs > 0 else None, **params}
    if recall is not None:
        out["recall"] = recall
    return out


def blas_bound(x: np.ndarray, block: int = 2048) -> float:
    out = np.empty((block, len(x)), dtype=x.dtype)  # one reused product buffer, as EXACT's tiles have

    def run():
        for s in range(0, len(x), block):
            q = x[s:s + block]
            np.matmul(q, x.T, out=out[:len(q)])

    return timed(run, f"BLAS bound n={len(x)}")[1]


_AS_INSTALLED_FLAT = """
import json, os, sys, time
os.environ.pop("OPENBLAS_CORETYPE", None)  # before faiss loads: its OpenBLAS detects the CPU on its own
import numpy as np, faiss
from focuscrawl.core.blas import openblas_kernels
x = np.load(sys.argv[1]); k = int(sys.argv[2])
start, cpu = time.perf_counter(), time.process_time()
index = faiss.IndexFlatIP(x.shape[1]); index.add(x); _, idx = index.search(x, k)
secs, cpu = time.perf_counter() - start, time.process_time() - cpu
np.save(sys.argv[3], idx)
print(json.dumps({"seconds": secs, "cpu": cpu, "kernels": openblas_kernels()}))
"""


def faiss_flat_as_installed(x: np.ndarray, exact: np.ndarray) -> dict:
    """FAISS flat with its OpenBLAS left to detect the CPU itself, in a process of its own (the kernels
    are chosen once, when the library loads): what the pin saves."""
    import json
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/x.npy", x)
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        done = subprocess.run([sys.executable, "-c", _AS_INSTALLED_FLAT, f"{tmp}/x.npy", str(K + 1), f"{tmp}/idx.npy"],
                              env=env, capture_output=True, text=True, check=True)
        got = json.loads(done.stdout.strip().splitlines()[-1])
        idx = exact_without_self(np.load(f"{tmp}/idx.npy"), np.arange(len(x)))
    print(f"  .. FAISS flat as installed: {got['seconds']:.1f} s (CPU {got['cpu']:.1f} s)", flush=True)
    return entry(len(x), got["seconds"], recall_at_k(idx, exact), got["cpu"], blas_kernels=got["kernels"])


def faiss_flat(x: np.ndarray) -> tuple[np.ndarray, float]:
    """FAISS's own exact search, k+1 with the query's own hit dropped (no wrapper)."""
    import faiss

    def run():
        index = faiss.IndexFlatIP(x.shape[1])
        index.add(x)
        _, idx = index.search(x, K + 1)
        return exact_without_self(idx, np.arange(len(x)))

    return timed(run, f"FAISS flat n={len(x)}")


def exact_without_self(idx: np.ndarray, ids: np.ndarray) -> np.ndarray:
    keep = idx != ids[:, None]
    keep[keep.all(axis=1), -1] = False
    return idx[keep].reshape(len(idx), idx.shape[1] - 1)


def sklearn_brute(x: np.ndarray) -> tuple[np.ndarray, float]:
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=K + 1, algorithm="brute", metric="cosine", n_jobs=1).fit(x)
    (_, idx), secs = timed(lambda: nn.kneighbors(x), f"sklearn brute n={len(x)}")
    return exact_without_self(idx, np.arange(len(x))), secs


def spark_lsh(x: np.ndarray, exact: np.ndarray) -> dict:
    """Spark ML's approximate self-join, thresholded at the 95th percentile of exact 30th-neighbour distances."""
    from pyspark.ml.feature import BucketedRandomProjectionLSH
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from focuscrawl.lake.spark import get_session

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
    return entry(len(x), secs, recall_at_k(approx, exact), cpu=None, n=len(x), threshold=threshold,
                 hash_tables=3)


def in_process(x: np.ndarray, ef_searches: list[int], probes: list[int], spark_n: int,
               with_sklearn: bool = True) -> dict:
    n = len(x)
    ids = np.arange(n)
    res: dict = {"blas_bound": entry(n, blas_bound(x))}
    exact, secs = faiss_flat(x)
    res["faiss_flat"] = entry(n, secs, 1.0)
    res["blas_kernels"] = openblas_kernels()
    res["faiss_flat_as_installed"] = faiss_flat_as_installed(x, exact)
    (idx, _), secs = timed(lambda: RELATED.create("EXACT", k=K).fit(x).search(x, ids), f"EXACT n={n}")
    res["EXACT"] = entry(n, secs, recall_at_k(idx, exact))
    hnsw, fit_secs = timed(lambda: RELATED.create("HNSW", k=K).fit(x), f"HNSW build n={n}")
    fit_cpu = timed.cpu
    res["HNSW"] = []
    for ef in ef_searches:
        hnsw.ef_search = ef  # the graph does not depend on the search width: one build serves all
        (idx, _), secs = timed(lambda: hnsw.search(x, ids), f"HNSW ef_search={ef}")
        res["HNSW"].append(entry(n, fit_secs + secs, recall_at_k(idx, exact), fit_cpu + timed.cpu, ef_search=ef, m=hnsw.m,
                                 ef_construction=hnsw.ef_construction, build_seconds=fit_secs))
    del hnsw
    ivf, fit_secs = timed(lambda: RELATED.create("IVF", k=K).fit(x), f"IVF train+add n={n}")
    fit_cpu = timed.cpu
    res["IVF"] = []
    for n_probe in probes:
        ivf.n_probe = n_probe
        (idx, _), secs = timed(lambda: ivf.search(x, ids), f"IVF n_probe={n_probe}")
        res["IVF"].append(entry(n, fit_secs + secs, recall_at_k(idx, exact), fit_cpu + timed.cpu, n_probe=n_probe,
                                n_lists=ivf.index_.nlist, build_seconds=fit_secs))
    del ivf
    (idx, _), secs = timed(lambda: handwritten_knn.TiledExactRelatedPages(k=K).fit(x).search(x, ids),
                           f"tiled exact n={n}")
    res["tiled_exact"] = entry(n, secs, recall_at_k(idx, exact))
    old_ivf, fit_secs = timed(lambda: handwritten_knn.IvfRelatedPages(k=K).fit(x), f"hand-written IVF fit n={n}")
    fit_cpu = timed.cpu
    res["handwritten_ivf"] = []
    for n_probe in probes:
        old_ivf.n_probe = n_probe
        (idx, _), secs = timed(lambda: old_ivf.search(x, ids), f"hand-written IVF n_probe={n_probe}")
        res["handwritten_ivf"].append(entry(n, fit_secs + secs, recall_at_k(idx, exact), fit_cpu + timed.cpu,
                                            n_probe=n_probe,
                                            n_lists=len(old_ivf.lists_), build_seconds=fit_secs))
    if with_sklearn:
        idx, secs = sklearn_brute(x)
        res["sklearn_brute"] = entry(n, secs, recall_at_k(idx, exact))
    if spark_n:
        sub = x[:spark_n]
        sub_exact, _ = faiss_flat(sub)
        res["spark_brp_lsh"] = spark_lsh(sub, sub_exact)
    flat = res["faiss_flat"]["seconds"]
    res["ratios"] = {
        "EXACT_over_faiss_flat_time": res["EXACT"]["seconds"] / flat,
        "tiled_exact_over_EXACT_time": res["tiled_exact"]["seconds"] / res["EXACT"]["seconds"],
        "faiss_flat_over_blas_bound_time": flat / res["blas_bound"]["seconds"],
        "sklearn_over_EXACT_time": res["sklearn_brute"]["seconds"] / res["EXACT"]["seconds"] if with_sklearn else None,
    }
    return res


def _url(i: int) -> str:
    return f"https://bench.example/p{i:07d}"


def write_embeddings(cfg, x: np.ndarray) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from focuscrawl.outlinks.tables import EMBEDDINGS

    n, d = x.shape
    values = pa.array(x.ravel(), type=pa.float32())
    offsets = pa.array(np.arange(0, n * d + 1, d, dtype=np.int32))
    schema = EMBEDDINGS.arrow_schema()
    vector = pa.ListArray.from_arrays(offsets, values, type=schema.field("vector").type)
    table = pa.table({"url": pa.array([_url(i) for i in range(n)], pa.string()),
                      "as_of_period": pa.array(np.zeros(n, np.int32)), "vector": vector}, schema=schema)
    write_deltalake(EMBEDDINGS.path(cfg), table, mode="overwrite")


def job_recall(cfg, x: np.ndarray, sample: int, seed: int = 0) -> tuple[float, int]:
    """recall@30 of the job's table against FAISS flat, on ``sample`` random query pages."""
    import faiss
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    from focuscrawl.outlinks.tables import RELATED_PAGES

    ids = np.sort(np.random.default_rng(seed).choice(len(x), size=min(sample, len(x)), replace=False))
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    _, idx = index.search(x[ids], K + 1)
    exact = exact_without_self(idx, ids)
    ds = DeltaTable(RELATED_PAGES.path(cfg)).to_pyarrow_dataset()
    got = ds.to_table(columns=["url", "neighbour", "rank"],
                      filter=pc.field("url").isin([_url(int(i)) for i in ids])).to_pandas()
    got["q"] = got["url"].str[-7:].astype(int)
    got["nb"] = got["neighbour"].str[-7:].astype(int)
    approx = np.full((len(ids), K), -1, dtype=np.int64)
    row = {int(q): r for r, q in enumerate(ids)}
    for q, group in got.groupby("q"):
        nbs = group.sort_values("rank")["nb"].to_numpy()[:K]
        approx[row[int(q)], :len(nbs)] = nbs
    return recall_at_k(approx, exact), len(ids)


def scratch_settings(prefix: str, master: str):
    """Settings whose state folder and lake are a fresh folder under the run-time one (``cfg.var_dir``: rmtree it)."""
    from focuscrawl.config import settings

    base = settings()
    base.var_dir.mkdir(parents=True, exist_ok=True)  # a fresh checkout's first benchmark: no state folder yet
    scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=base.var_dir))
    return dataclasses.replace(base, var_dir=scratch, lake=str(scratch / "lake"), spark_master=master)


def spark_job(method: str, n: int, threads: int, sample: int, master: str, options: list[str]) -> dict:
    """One run of the related-pages job through spark-submit on ``n`` synthetic vectors, in a scratch lake."""
    from focuscrawl.services.spark_cluster import spark_submit

    cfg = scratch_settings("knn-bench-", master)
    x, gen_secs = timed(lambda: vectors(n), f"synthetic vectors n={n}")
    _, write_secs = timed(lambda: write_embeddings(cfg, x), f"page_embeddings written n={n}")
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(threads)  # the job's driver build
    job = ROOT / "spark_jobs" / "outlinks_related.py"
    out, secs = timed(lambda: spark_submit(cfg, job, "--k", str(K), "--method", method, *options, timeout=3600),
                      f"spark-submit outlinks_related --method {method} n={n}")
    assert f"{n * K} pairs" in out or method != "EXACT", out
    recall, sampled = job_recall(cfg, x, sample)
    import shutil

    shutil.rmtree(cfg.var_dir, ignore_errors=True)
    return entry(n, secs, recall, cpu=None, method=method, n=n, options=options, master=master, driver_threads=threads,
                 recall_sample=sampled, data="synthetic", embeddings_write_seconds=write_secs,
                 spark_driver_memory=cfg.spark_driver_memory, output=out.strip().splitlines()[-1])


def parse_jobs(spec: str) -> list[tuple[str, int, list[str]]]:
    """``EXACT:384000,HNSW:1000000:--ef-search=96`` -> [(method, n, extra args)]."""
    jobs = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        method, n, *extra = item.split(":")
        jobs.append((method.upper(), int(n), [a for e in extra for a in e.split("=", 1)]))
    return jobs


def summary(res: dict) -> list[dict]:
    """Rows of the benchmark table (``python -m bench``): what, pages, seconds, pages/s, recall@30."""
    rows = []
    part = res.get("in_process")
    if part:
        n = res["n"]

        def row(name, r, note=""):
            rows.append({"what": f"related pages {name}", "n": r.get("n", n), "seconds": r["seconds"],
                         "cpu_seconds": r.get("cpu_seconds"),
                         "rate": r["pages_per_s"], "unit": "pages/s", "recall": r.get("recall"),
                         "note": note or f"in process, {res['data']} vectors d={res['d']}"})

        def kernels(found):
            return ", ".join(f"{k.split('/')[0]} {v}" for k, v in found.items())

        row("blas_bound", part["blas_bound"])
        row(f"faiss_flat, OPENBLAS_CORETYPE={res.get('openblas_coretype')}", part["faiss_flat"],
            f"in process, {res['data']} vectors d={res['d']}; OpenBLAS kernels: {kernels(part['blas_kernels'])}")
        r = part["faiss_flat_as_installed"]
        row("faiss_flat (as installed)", r, f"own process, {res['data']} vectors d={res['d']}; OpenBLAS kernels: "
            f"{kernels(r['blas_kernels'])}")
        row("EXACT", part["EXACT"])
        for r in part["HNSW"]:
            row(f"HNSW ef_search={r['ef_search']}", r)
        for r in part["IVF"]:
            row(f"IVF n_probe={r['n_probe']} of {r['n_lists']}", r)
        row("tiled exact (previous EXACT)", part["tiled_exact"])
        for r in part["handwritten_ivf"]:
            row(f"hand-written IVF n_probe={r['n_probe']} (previous)", r)
        if "sklearn_brute" in part:
            row("sklearn brute", part["sklearn_brute"])
        if "spark_brp_lsh" in part:
            row("Spark BRP LSH (subset)", part["spark_brp_lsh"], "Spark ML self-join, local[2]")
    for r in res.get("spark_jobs", []):
        rows.append({"what": f"related pages {r['method']} via spark-submit", "n": r["n"], "seconds": r["seconds"],
                     "rate": r["pages_per_s"], "unit": "pages/s", "recall": r["recall"],
                     "note": f"{r['master']}, synthetic d=100, recall on {r['recall_sample']} queries"})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000, help="vectors of the in-process comparison (0: skip it)")
    ap.add_argument("--data", choices=("erisk", "synthetic"), default="erisk", help="where those vectors come from")
    ap.add_argument("--spark-n", type=int, default=2000, help="pages for the Spark LSH self-join (0: skip)")
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--ef-search", default="32,64,128", help="HNSW search widths to measure")
    ap.add_argument("--probes", default="8,16,32", help="IVF probe counts to measure")
    ap.add_argument("--job", default="EXACT:20000,HNSW:20000", help="Spark-job runs METHOD:N[,...] ('' to skip)")
    ap.add_argument("--job-threads", type=int, default=os.cpu_count() or 1, help="threads of the job's driver")
    ap.add_argument("--job-master", default="local[2]")
    ap.add_argument("--recall-sample", type=int, default=2000, help="queries whose recall is checked in a job run")
    ap.add_argument("--out", type=Path, default=default_out("knn"))
    args = ap.parse_args(argv)
    res: dict = {"k": K, "openblas_coretype": pin_openblas_kernels(), "threads": {v: os.environ.get(v, "unset")
                                     for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}}
    if args.n:
        if args.data == "erisk":
            x, lsa_secs = erisk_vectors(args.n)
            res["lsa_seconds"] = lsa_secs
        else:
            x = vectors(args.n)
        res.update(n=args.n, d=x.shape[1], data=args.data)
        res["in_process"] = in_process(x, [int(e) for e in args.ef_search.split(",")],
                                       [int(p) for p in args.probes.split(",")], args.spark_n, not args.no_sklearn)
        del x
    res["spark_jobs"] = [spark_job(m, n, args.job_threads, args.recall_sample, args.job_master, extra)
                         for m, n, extra in parse_jobs(args.job)]
    for r in summary(res):
        recall = f"  recall@30 {r['recall']:.3f}" if r["recall"] is not None else ""
        print(f"  {r['what']:<48} n={r['n']:<8} {r['seconds']:9.2f} s {r['rate']:10.0f} {r['unit']}{recall}")
    write_result(args.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
