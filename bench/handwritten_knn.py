"""The hand-written related-pages search that FAISS replaced (docs/benchmarks.md), kept as a benchmark baseline only.

Blocked BLAS + argpartition (``ExactRelatedPages``) and a home-made inverted file over spherical k-means
cells (``IvfRelatedPages``), as they were in ``focuscrawl.outlinks.related`` before the FAISS methods.
``bench/knn_bench.py`` measures them in the same run as FAISS so the replacement stays justified
(seed 002, Section 7: the KNN step the paper ran for six hours).
"""

from __future__ import annotations

import numpy as np

from focuscrawl.outlinks.embedding import normalise_rows


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
