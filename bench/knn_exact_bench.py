"""Exact related pages: the product's ``EXACT`` against FAISS flat and the tiled search, in one run.

    python bench/knn_exact_bench.py [--n 20000,100000] [--repeats 3] [--data erisk|synthetic]
                                    [--out $FOCUSCRAWL_VAR/bench/knn_exact.json]

At each ``--n``, on the first n of focuscrawl's own LSA vectors (d=100) of real eRisk writings
(``knn_bench.erisk_vectors``, fitted once at the largest n), k=30 related pages of every page:

- ``faiss_flat``: FAISS ``IndexFlatIP.search`` called directly, its bundled OpenBLAS on this CPU's kernels
  (``OPENBLAS_CORETYPE``, pinned by ``focuscrawl.core.blas`` where this process starts, before FAISS loads);
- ``EXACT``: the product's method (``focuscrawl.outlinks.related``), build included;
- ``tiled_exact``: the hand-written tiled search over numpy's BLAS (``bench/handwritten_knn.py``);
- ``faiss_flat_as_installed`` (once, unless ``--no-as-installed``): FAISS flat in a process without the pin.

The three in-process methods run ``--repeats`` times, interleaved, so a burst of load hits them alike;
each keeps its fastest wall time (and that run's CPU seconds). The verdict: the product's time over the
faster of FAISS flat and the tiles (acceptance: at most 1.05). Recorded with the threads, the load before
and after, the commit and the OpenBLAS kernels; ``--plot`` draws seconds per method and size.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import handwritten_knn  # noqa: E402
import knn_bench  # noqa: E402
from result_json import default_out, write_result  # noqa: E402

from focuscrawl.core.blas import openblas_kernels, pin_openblas_kernels  # noqa: E402
from focuscrawl.experiments.run_record import git_commit  # noqa: E402
from focuscrawl.outlinks.related import RELATED, recall_at_k  # noqa: E402

K = knn_bench.K
ROOT = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
BOUND = 1.05  # the product may take at most this much longer than the faster exact search


def methods(x: np.ndarray):
    """name -> (run, its answer's indices): the three exact searches of the same vectors."""
    ids = np.arange(len(x))
    return {
        "faiss_flat": lambda: knn_bench.faiss_flat(x)[0],
        "EXACT": lambda: RELATED.create("EXACT", k=K).fit(x).search(x, ids)[0],
        "tiled_exact": lambda: handwritten_knn.TiledExactRelatedPages(k=K).fit(x).search(x, ids)[0],
    }


def one_size(x: np.ndarray, repeats: int, as_installed: bool) -> dict:
    n = len(x)
    runs: dict[str, list[tuple[float, float]]] = {}
    answers = {}
    for r in range(repeats):
        for name, run in methods(x).items():
            answers[name], secs = knn_bench.timed(run, f"{name} n={n} run {r + 1}")
            runs.setdefault(name, []).append((secs, knn_bench.timed.cpu))
    res = {}
    for name, times in runs.items():
        secs, cpu = min(times)
        res[name] = {**knn_bench.entry(n, secs, recall_at_k(answers[name], answers["faiss_flat"]), cpu),
                     "all_seconds": [round(s, 3) for s, _ in times]}
    if as_installed:
        res["faiss_flat_as_installed"] = knn_bench.faiss_flat_as_installed(x, answers["faiss_flat"])
    fastest = min(res["faiss_flat"]["seconds"], res["tiled_exact"]["seconds"])
    res["product_over_fastest"] = res["EXACT"]["seconds"] / fastest
    res["product_over_fastest_cpu"] = res["EXACT"]["cpu_seconds"] / min(res["faiss_flat"]["cpu_seconds"],
                                                                      res["tiled_exact"]["cpu_seconds"])
    res["within_bound"] = res["product_over_fastest"] <= BOUND
    return res


def plot(res: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["EXACT", "faiss_flat", "tiled_exact", "faiss_flat_as_installed"]
    sizes = res["sizes"]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        secs = [s.get(name, {}).get("seconds", np.nan) for s in sizes]
        ax.bar(np.arange(len(sizes)) + i * width, secs, width, label=name)
    ax.set_xticks(np.arange(len(sizes)) + width * (len(names) - 1) / 2, [f"n={s['n']:,}" for s in sizes])
    ax.set_ylabel("seconds (k=30 of every page, one thread)")
    ax.set_title(f"Exact related pages, {res['data']} vectors d={res['d']}, OPENBLAS_CORETYPE={res['openblas_coretype']}")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def summary(res: dict) -> list[dict]:
    """Rows of the benchmark table (``python -m bench``)."""
    rows = []
    for size in res["sizes"]:
        for name in ("EXACT", "faiss_flat", "tiled_exact", "faiss_flat_as_installed"):
            if name in size:
                r = size[name]
                note = f"{res['data']} d={res['d']}, min of {res['repeats']}" if "all_seconds" in r else "own process"
                if name == "EXACT":
                    note += (f"; {size['product_over_fastest']:.2f}x the faster of flat and tiles "
                             f"(CPU {size['product_over_fastest_cpu']:.2f}x)")
                rows.append({"what": f"exact related pages {name}", "n": size["n"], "seconds": r["seconds"],
                             "cpu_seconds": r.get("cpu_seconds"), "rate": r["pages_per_s"], "unit": "pages/s",
                             "recall": r.get("recall"), "note": note})
    return rows


def main(argv: list[str] | None = None) -> int:
    coretype = pin_openblas_kernels()  # first: before anything loads FAISS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="20000,100000", help="comma-separated sizes")
    ap.add_argument("--data", choices=("erisk", "synthetic"), default="erisk")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-as-installed", action="store_true", help="skip FAISS flat without the pin")
    ap.add_argument("--out", type=Path, default=default_out("knn_exact"))
    ap.add_argument("--plot", type=Path, default=None, help="PNG of seconds per method and size")
    args = ap.parse_args(argv)
    sizes = sorted(int(n) for n in args.n.split(","))
    res: dict = {"k": K, "openblas_coretype": coretype, "data": args.data, "repeats": args.repeats,
                 "threads": {v: os.environ.get(v, "unset") for v in THREAD_VARS},
                 "load_before": [round(v, 2) for v in os.getloadavg()], "commit": git_commit(ROOT)}
    if args.data == "erisk":
        x, res["lsa_seconds"] = knn_bench.erisk_vectors(sizes[-1])
    else:
        x = knn_bench.vectors(sizes[-1])
    res["d"] = x.shape[1]
    res["sizes"] = [{"n": n, **one_size(np.ascontiguousarray(x[:n]), args.repeats, not args.no_as_installed)}
                    for n in sizes]
    res["blas_kernels"] = openblas_kernels()
    res["load_after"] = [round(v, 2) for v in os.getloadavg()]
    for r in summary(res):
        print(f"  {r['what']:<44} n={r['n']:<8} {r['seconds']:9.2f} s  CPU {r['cpu_seconds']:8.2f} s  {r['note']}")
    if args.plot:
        print(f"plot: {plot(res, args.plot)}")
    write_result(args.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
