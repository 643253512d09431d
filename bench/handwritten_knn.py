"""The hand-written related-pages searches FAISS replaced (docs/benchmarks.md), kept as benchmark baselines only.

``TiledExactRelatedPages``, the exact search the product ran while faiss-cpu's bundled OpenBLAS ran
generic kernels on this CPU (tiles of BLAS products over numpy's OpenBLAS against a running k-th best),
and a home-made inverted file over spherical k-means cells (``IvfRelatedPages``), the first approximate
method. ``bench/knn_bench.py`` measures them in the same run as FAISS so the replacement stays
justified (seed 002, Section 7: the KNN step the paper ran for six hours).
"""

from __future__ import annotations

import numpy as np

from focuscrawl.outlinks.embedding import normalise_rows
from focuscrawl.outlinks.related import ExactRelatedPages


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


class TiledExactRelatedPages(ExactRelatedPages):
    """Brute force, tile by tile against a running k-th best per query: the exact top k.

    ``query_tile`` queries x ``page_tile`` pages per BLAS product (numpy's), into one reused buffer: a
    similarity enters a query's top k only above that query's k-th best so far, one vector compare per
    tile, so the top-k bookkeeping touches a few entries per row instead of all of them. The fitting,
    blocking and self-exclusion are the product's ``EXACT`` (``focuscrawl.outlinks.related``); only the
    search of one block differs.
    """

    def __init__(self, *, k: int = 30, block_size: int = 16_384, query_tile: int = 256,
                 page_tile: int = 8192) -> None:
        super().__init__(k=k, block_size=block_size)
        self.query_tile = query_tile
        self.page_tile = page_tile

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
