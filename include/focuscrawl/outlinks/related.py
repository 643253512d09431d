"""Related pages: the k=30 most content-similar pages of every page (seed 002, Section 7, "KNN").

The seed ran scikit-learn's KNN for six hours on 16 cores (``O(k m^2 d)`` for ``m`` pages of dimension
``d``). Here the search is one protocol with three methods on FAISS (``faiss-cpu``), chosen by name:

- ``EXACT``: the unit-length vectors kept in an ``IndexFlatIP`` (inner product = cosine), searched tile by
  tile (``query_tile`` queries x ``page_tile`` pages, one BLAS product each into one reused buffer): a
  similarity enters a query's top k only above that query's k-th best so far, one vector compare per
  tile, so the top-k bookkeeping touches a few entries per row instead of all of them. Same answer as
  ``IndexFlatIP.search`` (ties aside) at 0.34x its CPU as installed: 4096 queries x 100k synthetic pages,
  d=100, one thread, 1.39 s against 4.14 s (2026-12-02, loaded machine, min of 3). The margin is FAISS's
  BLAS, not its search: faiss-cpu 1.15.1 bundles OpenBLAS 0.3.15, which does not know this CPU and runs
  its Prescott (SSE3) kernels (``threadpoolctl.threadpool_info()``), where numpy's OpenBLAS 0.3.31 runs
  SkylakeX (AVX-512) ones; forced to SkylakeX (``OPENBLAS_CORETYPE``) FAISS flat took 1.17 s against
  the tiles' 1.29 s (min of 5);
- ``HNSW``: ``IndexHNSWFlat`` (inner product), a navigable small-world graph; ``ef_search`` trades
  time for recall;
- ``IVF``: ``IndexIVFFlat`` (inner product), k-means cells; every query scans its ``n_probe`` nearest.

All return ``(indices, similarities)`` of shape ``(n_queries, k)``, best first, never the query itself
when ``query_ids`` names the queries' own rows (searched as k+1, the query's own hit dropped).
An approximate method may pad a row with ``-1`` when it found fewer than k. Recall is measured, not
assumed (:func:`recall_at_k`, ``bench/knn_bench.py``). The hand-written search these replaced is the
benchmark's baseline (``bench/handwritten_knn.py``): FAISS was faster at every size measured there.

A fitted method pickles through ``faiss.serialize_index``, so the Spark job builds the index once on
the driver and broadcasts it (``spark_transforms.related``).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

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
    import faiss
    from threadpoolctl import threadpool_limits

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
        import faiss

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
        import faiss

        state = dict(self.__dict__)
        if "index_" in state:
            state["index_"] = faiss.serialize_index(state["index_"])
        return state

    def __setstate__(self, state):
        import faiss

        if "index_" in state:
            state["index_"] = faiss.deserialize_index(state["index_"])
        self.__dict__.update(state)


@RELATED.register("EXACT")
class ExactRelatedPages(_FaissRelatedPages):
    """Brute force, tile by tile against a running k-th best per query: the exact top k.

    ``query_tile`` x ``page_tile`` similarities per BLAS product (8 MB at 256 x 8192). The shape hardly
    matters: the products alone took 1.6-2.0 ns per pair from 256 x 8192 to 4096 x 1024, the whole search
    3.1 and 3.0 ns at 256 x 8192 and 512 x 4096 (min of 5, 2026-12-02). What it cost before, on the module
    docstring's case (CPU): products 1.1 s, 2-D ``np.nonzero`` of the compare 1.0 s, merges by ``lexsort``
    0.35 s, the first tile's argpartition 0.2 s; with flat positions, one padded sort per merge and reused
    buffers the search went from 2.79 to 1.39 s, and on 50k real eRisk LSA vectors (all 50k queries) from
    19.6 to 9.6 s, the same neighbours and similarities bit for bit.
    """

    exact = True

    def __init__(self, *, k: int = DEFAULT.k, block_size: int = 16_384, query_tile: int = 256,
                 page_tile: int = 8192) -> None:
        self.k = k
        self.block_size = block_size
        self.query_tile = query_tile
        self.page_tile = page_tile

    def _build(self, x):
        import faiss

        index = faiss.IndexFlatIP(x.shape[1])
        index.add(x)
        return index

    def _top(self, q, ask):
        x = self.vectors_
        n, tile = len(x), max(self.page_tile, ask)
        sims = np.empty((len(q), ask), np.float32)
        idx = np.empty((len(q), ask), np.int64)
        # One product buffer and one mask serve every tile (a fresh 8 MB product per tile cost page faults).
        buf = np.empty(min(self.query_tile, len(q)) * min(tile, n), np.float32)
        above = np.empty(len(buf), bool)
        for start in range(0, len(q), self.query_tile):
            block = q[start:start + self.query_tile]
            nb, w = len(block), min(tile, n)
            s = buf[:nb * w].reshape(nb, w)
            np.negative(np.matmul(block, x[:w].T, out=s), out=s)  # argpartition picks the largest as before
            best_idx = np.argpartition(s, ask - 1, axis=1)[:, :ask]
            best = -np.take_along_axis(s, best_idx, axis=1)
            kth = best.min(axis=1)
            for first in range(tile, n, tile):
                w = min(tile, n - first)
                s = np.matmul(block, x[first:first + w].T, out=buf[:nb * w].reshape(nb, w))
                # Flat positions, row by row: 2-D np.nonzero cost 14x more than flatnonzero and divmod.
                hits = np.flatnonzero(np.greater(s, kth[:, None], out=above[:nb * w].reshape(nb, w)))
                if len(hits):
                    rows, cols = np.divmod(hits, w)
                    _merge(best, best_idx, kth, rows, s.ravel()[hits], cols + first)
            order = np.argsort(-best, axis=1, kind="stable")
            sims[start:start + nb] = np.take_along_axis(best, order, axis=1)
            idx[start:start + nb] = np.take_along_axis(best_idx, order, axis=1)
        return sims, idx


def _merge(best: np.ndarray, best_idx: np.ndarray, kth: np.ndarray, rows: np.ndarray, sims: np.ndarray,
           ids: np.ndarray) -> None:
    """Fold new candidates (``rows`` ascending, pages in order within a row) into each row's top ``best.shape[1]``.

    Per touched row, a stable sort of its top k so far followed by its candidates: at equal similarity the page
    met first stays, so a tie never displaces an earlier page. The rows are padded to the longest (with -inf,
    which sorts last) so one 2-D sort serves them all.
    """
    ask = best.shape[1]
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    touched, counts = rows[starts], np.diff(np.r_[starts, len(rows)])
    slot = np.repeat(np.arange(len(touched)), counts)
    col = ask + np.arange(len(rows)) - starts[slot]
    vals = np.full((len(touched), ask + counts.max()), -np.inf, np.float32)
    vids = np.empty(vals.shape, np.int64)
    vals[:, :ask], vids[:, :ask] = best[touched], best_idx[touched]
    vals[slot, col], vids[slot, col] = sims, ids
    keep = np.argsort(-vals, axis=1, kind="stable")[:, :ask]
    best[touched] = np.take_along_axis(vals, keep, axis=1)
    best_idx[touched] = np.take_along_axis(vids, keep, axis=1)
    kth[touched] = best[touched, -1]


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
        import faiss

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
        import faiss

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
