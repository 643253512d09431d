"""Related pages: the k=30 most content-similar pages of every page (seed 002, Section 7, "KNN").

The seed ran scikit-learn's KNN for six hours (``O(k m^2 d)``). Here the search is one protocol
with two methods, chosen by name:

- ``EXACT``: blocks of queries times the whole (unit-length) matrix, one BLAS ``sgemm`` per block,
  then ``argpartition`` for the top k: the brute-force cost, at matrix-multiply speed, in bounded memory;
- ``IVF``: an inverted file: k-means cells (coarse quantiser) over the vectors; every query scans
  only the members of its ``n_probe`` nearest cells. Cells are processed one at a time against all
  queries that probe them, so each step is again a matrix product. Recall is measured, not assumed
  (:func:`recall_at_k`).

Both return ``(indices, similarities)`` of shape ``(n_queries, k)``, best first, never the query itself
when searching the fitted set.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from focuscrawl.outlinks.embedding import normalise_rows
from focuscrawl.registry import Registry


class RelatedPages(Protocol):
    k: int

    def fit(self, vectors: np.ndarray) -> "RelatedPages": ...

    def search(self, queries: np.ndarray, query_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top k of each query among the fitted vectors; ``query_ids`` are the queries' own rows to exclude."""
        ...


RELATED = Registry[RelatedPages]("related-pages method")


def _merge_top_k(best_idx, best_sim, cand_idx, cand_sim, k):
    """Keep the k largest of the current best and the candidates, per row (both unsorted)."""
    idx = np.concatenate([best_idx, cand_idx], axis=1)
    sim = np.concatenate([best_sim, cand_sim], axis=1)
    if sim.shape[1] > k:
        part = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        idx = np.take_along_axis(idx, part, axis=1)
        sim = np.take_along_axis(sim, part, axis=1)
    return idx, sim


def _sorted(idx, sim):
    order = np.argsort(-sim, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(sim, order, axis=1)


def _top_k_block(sims: np.ndarray, k: int, group: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and values of each row's k largest (unsorted).

    A full argpartition of every row costs about as much as the matrix product that made it, so on
    wide blocks the columns are cut into groups of ``group``: only the k groups with the largest
    maxima can hold the top k (any other group's maximum is below k larger values), and the
    argpartition runs over those ``k * group`` candidates. The group maxima are one vectorised pass.
    """
    rows, n = sims.shape
    k_eff = min(k, n)
    if n < 8 * k_eff * group:
        part = np.argpartition(sims, n - k_eff, axis=1)[:, n - k_eff:]
        return part, np.take_along_axis(sims, part, axis=1)
    n_groups = n // group
    main = n_groups * group
    maxima = sims[:, :main].reshape(rows, n_groups, group).max(axis=2)
    best_groups = np.argpartition(maxima, n_groups - k_eff, axis=1)[:, n_groups - k_eff:]
    cols = (best_groups[:, :, None] * group + np.arange(group)).reshape(rows, k_eff * group)
    if main < n:  # the ragged last columns are always candidates
        cols = np.hstack([cols, np.broadcast_to(np.arange(main, n), (rows, n - main))])
    cand = np.take_along_axis(sims, cols, axis=1)
    part = np.argpartition(cand, cand.shape[1] - k_eff, axis=1)[:, cand.shape[1] - k_eff:]
    return np.take_along_axis(cols, part, axis=1), np.take_along_axis(cand, part, axis=1)


@RELATED.register("EXACT")
class ExactRelatedPages:
    """Blocked brute force: ``block_size`` queries x all vectors per matrix product."""

    def __init__(self, k: int = 30, block_size: int = 2048) -> None:
        self.k = k
        self.block_size = block_size

    def fit(self, vectors: np.ndarray) -> "ExactRelatedPages":
        self.vectors_ = normalise_rows(vectors)
        return self

    def search(self, queries, query_ids=None):
        q = normalise_rows(queries)
        k = min(self.k, len(self.vectors_) - (query_ids is not None))
        out_idx = np.empty((len(q), k), dtype=np.int64)
        out_sim = np.empty((len(q), k), dtype=np.float32)
        for start in range(0, len(q), self.block_size):
            stop = min(start + self.block_size, len(q))
            sims = q[start:stop] @ self.vectors_.T
            if query_ids is not None:
                # The page itself is not its own related page.
                sims[np.arange(stop - start), query_ids[start:stop]] = -np.inf
            part, top = _top_k_block(sims, k)
            out_idx[start:stop], out_sim[start:stop] = _sorted(part, top)
        return out_idx, out_sim


def kmeans(x: np.ndarray, n_clusters: int, iterations: int = 10, seed: int = 0, sample: int = 65_536) -> np.ndarray:
    """Spherical k-means centroids (Lloyd on a sample, assignments by dot product: one matmul per step)."""
    rng = np.random.default_rng(seed)
    train = x[rng.choice(len(x), size=min(sample, len(x)), replace=False)]
    centroids = train[rng.choice(len(train), size=n_clusters, replace=False)].copy()
    for _ in range(iterations):
        assign = np.argmax(train @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, train)
        empty = np.bincount(assign, minlength=n_clusters) == 0
        sums[empty] = train[rng.choice(len(train), size=int(empty.sum()), replace=False)]
        centroids = normalise_rows(sums)
    return centroids


@RELATED.register("IVF")
class IvfRelatedPages:
    """Inverted file over spherical k-means cells; ``n_lists`` defaults to about ``sqrt(n)``."""

    def __init__(self, k: int = 30, n_lists: int | None = None, n_probe: int = 8, seed: int = 0) -> None:
        self.k = k
        self.n_lists = n_lists
        self.n_probe = n_probe
        self.seed = seed

    def fit(self, vectors: np.ndarray) -> "IvfRelatedPages":
        self.vectors_ = normalise_rows(vectors)
        n_lists = self.n_lists or max(1, int(np.sqrt(len(vectors))))
        self.centroids_ = kmeans(self.vectors_, min(n_lists, len(vectors)), seed=self.seed)
        assign = np.argmax(self.vectors_ @ self.centroids_.T, axis=1)
        order = np.argsort(assign, kind="stable")
        bounds = np.searchsorted(assign[order], np.arange(len(self.centroids_) + 1))
        self.lists_ = [order[bounds[c]:bounds[c + 1]] for c in range(len(self.centroids_))]
        return self

    def search(self, queries, query_ids=None):
        q = normalise_rows(queries)
        n_probe = min(self.n_probe, len(self.centroids_))
        k = min(self.k, len(self.vectors_) - (query_ids is not None))
        probes = np.argpartition(-(q @ self.centroids_.T), n_probe - 1, axis=1)[:, :n_probe]
        best_idx = np.full((len(q), k), -1, dtype=np.int64)
        best_sim = np.full((len(q), k), -np.inf, dtype=np.float32)
        # Queries grouped by probed cell: one matrix product per cell.
        flat_cells = probes.ravel()
        flat_queries = np.repeat(np.arange(len(q)), n_probe)
        order = np.argsort(flat_cells, kind="stable")
        bounds = np.searchsorted(flat_cells[order], np.arange(len(self.centroids_) + 1))
        for cell, members in enumerate(self.lists_):
            qs = flat_queries[order[bounds[cell]:bounds[cell + 1]]]
            if len(qs) == 0 or len(members) == 0:
                continue
            sims = q[qs] @ self.vectors_[members].T
            if query_ids is not None:
                sims[query_ids[qs][:, None] == members[None, :]] = -np.inf
            part, top = _top_k_block(sims, k)
            best_idx[qs], best_sim[qs] = _merge_top_k(best_idx[qs], best_sim[qs], members[part], top, k)
        return _sorted(best_idx, best_sim)


def related_pages(vectors: np.ndarray, method: str = "EXACT", k: int = 30, **options) -> tuple[np.ndarray, np.ndarray]:
    """The k related pages of every fitted vector (self excluded)."""
    searcher = RELATED.create(method, k=k, **options).fit(vectors)
    return searcher.search(vectors, query_ids=np.arange(len(vectors)))


def recall_at_k(approx: np.ndarray, exact: np.ndarray) -> float:
    """Mean fraction of each row's exact top k found by the approximate top k."""
    hits = sum(len(np.intersect1d(a[a >= 0], e)) for a, e in zip(approx, exact))
    return hits / exact.size
