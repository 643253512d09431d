"""The hand-written exact search kept as the related-pages benchmark's baseline (``bench/handwritten_knn.py``):
it must still give the product's answer, or the benchmark compares the product with a wrong search."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from focuscrawl.outlinks.embedding import normalise_rows
from focuscrawl.outlinks.related import recall_at_k, related_pages

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.handwritten_knn import TiledExactRelatedPages  # noqa: E402


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    c = rng.normal(size=(60, 32))
    x = (c[rng.integers(0, 60, 3000)] + 0.3 * rng.normal(size=(3000, 32))).astype(np.float32)
    return x, related_pages(x, "EXACT", k=30)[0]


def test_tiles_give_the_answer_of_faiss_flat(data):
    """Small tiles force the running k-th best and the merges: the neighbours of the product's EXACT."""
    x, exact = data
    tiled = TiledExactRelatedPages(k=30, query_tile=64, page_tile=97).fit(x)
    idx, sims = tiled.search(x, query_ids=np.arange(len(x)))
    assert recall_at_k(idx, exact) > 0.999  # only the order of exact ties can differ
    unit = normalise_rows(x)
    np.testing.assert_allclose(sims, np.einsum("nd,nkd->nk", unit, unit[idx]), atol=1e-5)
    assert np.all(np.diff(sims, axis=1) <= 1e-6)


def test_ties_across_tiles_keep_the_pages_met_first():
    """Copies of one page, all equally similar to the query, past the first tile: the earliest k stay."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(600, 16)).astype(np.float32)
    copies = [150, 151, 260, 330, 331, 332, 590]
    x[copies] = x[0] + 0.01 * x[1]  # closer to page 0 than any random page, all at the same cosine
    fitted = TiledExactRelatedPages(k=4, query_tile=64, page_tile=97).fit(x)
    idx, sims = fitted.search(fitted.vectors_[[0]], query_ids=np.array([0]))
    assert idx[0].tolist() == copies[:4]
    assert np.ptp(sims[0]) == 0.0
