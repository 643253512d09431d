"""Related pages: the k=30 most content-similar pages of every page (seed 002, Section 7, "KNN").

The seed ran scikit-learn's KNN for six hours on 16 cores (``O(k m^2 d)`` for ``m`` pages of dimension
``d``). Here the search is one protocol with three methods on FAISS (``faiss-cpu``), chosen by name:

- ``EXACT``: the unit-length vectors kept in an ``IndexFlatIP`` (inner product = cosine), searched by
  ``IndexFlatIP.search``: brute force, the true top k. FAISS's bundled OpenBLAS runs this CPU's own
  kernels (``focuscrawl.core.blas``, pinned where the process starts): as installed it ran generic SSE3
  ones and lost to a hand-written tiled search over numpy's BLAS, which now is the benchmark's baseline
  (``bench/handwritten_knn.py``); on the right kernels FAISS wins (``bench/knn_bench.py``,
  ``docs/benchmarks.md``);
- ``HNSW``: ``IndexHNSWFlat`` (inner product), a navigable small-world graph; ``ef_search`` trades
  time for recall;
- ``IVF``: ``IndexIVFFlat`` (inner product), k-means cells; every query scans its ``n_probe`` nearest.

All return ``(indices, similarities)`` of shape ``(n_queries, k)``, best first, never the query itself
when ``query_ids`` names the queries' own rows (searched as k+1, the query's own hit dropped).
An approximate method may pad a row with ``-1`` when it found fewer than k. Recall is measured, not
assumed (:func:`recall_at_k`, ``bench/knn_bench.py``). The hand-written searches these replaced are the
benchmark's baselines (``bench/handwritten_knn.py``), measured in the same run.

A fitted method pickles through ``faiss.serialize_index``, so the Spark job builds the index once on
the driver and broadcasts it (``spark_transforms.related``).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from focuscrawl.core.blas import load_faiss
from focuscrawl.outlinks.embedding import normalise_rows
from focuscrawl.outlinks.params import DEFAULT
from focuscrawl.core.registry import Registry


class RelatedPages(Protocol):
    k: int
    exact: bool  # the true top k (ties aside), or an approximation whose recall must be measured

    def fit(self, vectors: np.ndarray) -> "RelatedPages": ...

    @property
    def vectors_(self) -> np.ndarray:
        """The fitted unit-length vectors (n x d float32), row i is page i."""
        ...

    def search(self, queries: np.ndarray, query_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top k of each query among the fitted vectors; ``query_ids`` are the queries' own rows to exclude."""
        ...


RELATED = Registry[RelatedPages]("related-pages method")


def set_threads(n: int) -> None:
    """Threads FAISS (OpenMP) and BLAS use in this process: 1 per Spark task, so tasks do not oversubscribe cores."""
    from threadpoolctl import threadpool_limits

    faiss = load_faiss()
    faiss.omp_set_num_threads(max(1, int(n)))
    threadpool_limits(max(1, int(n)), user_api="blas")


def _drop_self(idx: np.ndarray, sim: np.ndarray, query_ids: np.ndarray, k: int):
    """From k+1 results per row, drop the query's own row (or the last one when it is not among them)."""
    keep = idx != np.asarray(query_ids)[:, None]
    keep[keep.all(axis=1), -1] = False
    return idx[keep].reshape(len(idx), k), sim[keep].reshape(len(idx), k)


class _FaissRelatedPages:
    """What the three methods share: fitting an index, blocked search, self-exclusion, pickling."""

    block_size: int = 16_384

    def _build(self, x: np.ndarray):  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def _prepare(self, index) -> None:
        """Search-time knobs (``efSearch``, ``nprobe``) set on the index before each search."""

    def _top(self, q: np.ndarray, ask: int) -> tuple[np.ndarray, np.ndarray]:
        """``(similarities, indices)`` of each unit-length query's ``ask`` best, best first."""
        return self.index_.search(q, ask)

    def fit(self, vectors: np.ndarray):
        x = np.ascontiguousarray(normalise_rows(vectors))
        if x.ndim != 2 or len(x) == 0:
            raise ValueError(f"related pages need a non-empty n x d matrix, got shape {x.shape}")
        self.index_ = self._build(x)
        return self

    @property
    def vectors_(self) -> np.ndarray:
        """A view of the index's own float32 storage (valid while this object lives)."""
        faiss = load_faiss()
        storage = faiss.downcast_index(getattr(self.index_, "storage", self.index_))
        n, d = storage.ntotal, storage.d
        return faiss.rev_swig_ptr(storage.get_xb(), n * d).reshape(n, d)

    def search(self, queries, query_ids=None):
        q = np.ascontiguousarray(normalise_rows(queries))
        n = self.index_.ntotal
        k = min(self.k, n - (query_ids is not None))
        ask = k + (query_ids is not None)
        self._prepare(self.index_)
        out_idx = np.empty((len(q), k), dtype=np.int64)
        out_sim = np.empty((len(q), k), dtype=np.float32)
        for start in range(0, len(q), self.block_size):
            stop = min(start + self.block_size, len(q))
            sim, idx = self._top(q[start:stop], ask) if ask > 0 else (
                np.empty((stop - start, 0), np.float32), np.empty((stop - start, 0), np.int64))
            if query_ids is not None:
                idx, sim = _drop_self(idx, sim, query_ids[start:stop], k)
            out_idx[start:stop], out_sim[start:stop] = idx, sim
        return out_idx, out_sim

    def __getstate__(self):
        faiss = load_faiss()
        state = dict(self.__dict__)
        if "index_" in state:
            state["index_"] = faiss.serialize_index(state["index_"])
        return state

    def __setstate__(self, state):
        faiss = load_faiss()
        if "index_" in state:
            state["index_"] = faiss.deserialize_index(state["index_"])
        self.__dict__.update(state)


@RELATED.register("EXACT")
class ExactRelatedPages(_FaissRelatedPages):
    """Brute force by FAISS ``IndexFlatIP.search``: the exact top k (ties aside)."""

    exact = True

    def __init__(self, *, k: int = DEFAULT.k, block_size: int = 16_384) -> None:
        self.k = k
        self.block_size = block_size

    def _build(self, x):
        index = load_faiss().IndexFlatIP(x.shape[1])
        index.add(x)
        return index


@RELATED.register("HNSW")
class HnswRelatedPages(_FaissRelatedPages):
    """FAISS ``IndexHNSWFlat`` (inner product): ``m`` links per node, ``ef_search`` candidates per query.

    The approximate method for 1M pages. Defaults measured on 100k synthetic vectors (d=100, one thread,
    CPU on a loaded machine, 2026-12-01): build 12.5 s; a query 136 us at recall@30 1.000 (``ef_search``
    64: 92 us, 0.9996; 32: 76 us, 0.9975). On 20k real eRisk LSA vectors ``ef_search`` 64 reached 0.973
    and 128 0.990 (bench-quick), so 96 keeps 0.95 on real text. ``m`` 16 built no cheaper (11.4 s) and
    lost recall (0.990 at 32). IVF was cheaper per query on the synthetic set (34 us at 4 of 1264 probes,
    recall 1.0), but its k-means grows as n x ``n_lists`` (13.9 s at 100k, ~440 s at 1M) and its recall
    on real text is lower (0.889 at 32 of 512 probes).
    """

    exact = False

    def __init__(self, *, k: int = DEFAULT.k, m: int = 32, ef_construction: int = 64, ef_search: int = 96,
                 block_size: int = 16_384) -> None:
        self.k = k
        self.m = m
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.block_size = block_size

    def _build(self, x):
        faiss = load_faiss()
        index = faiss.IndexHNSWFlat(x.shape[1], self.m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.ef_construction
        index.add(x)
        return index

    def _prepare(self, index):
        index.hnsw.efSearch = max(self.ef_search, self.k + 1)


@RELATED.register("IVF")
class IvfRelatedPages(_FaissRelatedPages):
    """FAISS ``IndexIVFFlat`` (inner product) over ``n_lists`` k-means cells (default ``4 sqrt(n)``)."""

    exact = False

    def __init__(self, *, k: int = DEFAULT.k, n_lists: int | None = None, n_probe: int = 16, seed: int = 0,
                 block_size: int = 16_384) -> None:
        self.k = k
        self.n_lists = n_lists
        self.n_probe = n_probe
        self.seed = seed
        self.block_size = block_size

    def _build(self, x):
        faiss = load_faiss()
        n, d = x.shape
        # FAISS wants ~39 training points per cell; fewer cells on small inputs.
        n_lists = max(1, min(self.n_lists or int(4 * np.sqrt(n)), n // 39 or 1))
        self.vectors_copy_ = x  # IVF stores vectors by cell, not by row: the rows are kept apart
        quantiser = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFFlat(quantiser, d, n_lists, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = self.seed
        index.train(x)
        index.add(x)
        return index

    @property
    def vectors_(self) -> np.ndarray:
        return self.vectors_copy_

    def _prepare(self, index):
        index.nprobe = min(self.n_probe, index.nlist)


def related_pages(vectors: np.ndarray, method: str = DEFAULT.method, k: int = DEFAULT.k, **options) -> tuple[np.ndarray, np.ndarray]:
    """The k related pages of every fitted vector (self excluded)."""
    searcher = RELATED.create(method, k=k, **options).fit(vectors)
    return searcher.search(vectors, query_ids=np.arange(len(vectors)))


def recall_at_k(approx: np.ndarray, exact: np.ndarray) -> float:
    """Mean fraction of each row's exact top k found by the approximate top k."""
    hits = sum(len(np.intersect1d(a[a >= 0], e)) for a, e in zip(approx, exact))
    return hits / exact.size
