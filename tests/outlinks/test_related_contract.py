"""The related-pages contract (seed 002, Section 7), run over every registered method.

Every method: the query is never its own related page (even when another page has the same vector),
results come best first with the true cosine of each pair, a fitted method survives pickling (the
Spark job broadcasts it), inputs smaller than k give every other page. Exact methods give the same
neighbours as scikit-learn's brute force; approximate ones have their recall@30 against exact measured.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from focuscrawl.outlinks.embedding import normalise_rows
from focuscrawl.outlinks.related import RELATED, recall_at_k, related_pages

METHODS = RELATED.names()


def clustered(n=3000, d=32, centres=60, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, d))
    return (c[rng.integers(0, centres, n)] + 0.3 * rng.normal(size=(n, d))).astype(np.float32)


@pytest.fixture(scope="module")
def data():
    x = clustered()
    exact, _ = related_pages(x, "EXACT", k=30)
    return x, exact


def test_the_registry_holds_exact_and_approximate_faiss_methods():
    assert {"EXACT", "HNSW", "IVF"} <= set(METHODS)
    assert [m for m in METHODS if RELATED.get(m).exact] == ["EXACT"]


@pytest.mark.parametrize("method", METHODS)
def test_query_excluded_sorted_and_similarities_true(method, data):
    x, _ = data
    idx, sims = related_pages(x, method, k=30)
    assert idx.shape == sims.shape == (len(x), 30)
    assert not np.any(idx == np.arange(len(x))[:, None])
    assert np.all(np.diff(sims, axis=1) <= 1e-6)  # best first
    unit = normalise_rows(x)
    found = idx >= 0
    true = np.einsum("nd,nkd->nk", unit, unit[np.where(found, idx, 0)])
    np.testing.assert_allclose(sims[found], true[found], atol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_same_neighbours_as_exact_or_recall_measured(method, data):
    x, exact = data
    idx, sims = related_pages(x, method, k=30)
    recall = recall_at_k(idx, exact)
    print(f"{method}: recall@30 {recall:.4f} on {len(x)} clustered vectors")
    if RELATED.get(method).exact:
        from sklearn.neighbors import NearestNeighbors

        dist, ref = NearestNeighbors(n_neighbors=31, metric="cosine", algorithm="brute").fit(x).kneighbors(x)
        np.testing.assert_allclose(sims, 1 - dist[:, 1:], atol=1e-4)
        assert recall_at_k(idx, ref[:, 1:]) > 0.999  # only the order of exact ties can differ
    else:
        assert recall >= 0.95  # the default knobs on easy (clustered) data


@pytest.mark.parametrize("method", METHODS)
def test_a_duplicate_page_is_related_but_the_query_is_not(method):
    x = clustered(400, seed=3)
    x[1] = x[0]  # two pages with the same content
    idx, sims = related_pages(x, method, k=5)
    assert idx[0, 0] == 1 and idx[1, 0] == 0
    assert sims[0, 0] == pytest.approx(1.0, abs=1e-5)
    assert not np.any(idx == np.arange(len(x))[:, None])


@pytest.mark.parametrize("method", METHODS)
def test_pickled_method_searches_the_same(method, data):
    x, _ = data
    fitted = RELATED.create(method, k=10).fit(x)
    ids = np.arange(0, len(x), 37)
    want = fitted.search(fitted.vectors_[ids], query_ids=ids)
    thawed = pickle.loads(pickle.dumps(fitted))
    got = thawed.search(thawed.vectors_[ids], query_ids=ids)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1])
    np.testing.assert_allclose(thawed.vectors_, normalise_rows(x))


@pytest.mark.parametrize("method", METHODS)
def test_fewer_pages_than_k_gives_every_other_page(method):
    x = clustered(6, seed=1)
    idx, sims = related_pages(x, method, k=30)
    assert idx.shape == sims.shape == (6, 5)
    for i, row in enumerate(idx):
        assert sorted(row) == [j for j in range(6) if j != i]


@pytest.mark.parametrize("method", METHODS)
def test_outside_queries_find_their_copy_first(method, data):
    x, _ = data
    fitted = RELATED.create(method, k=3).fit(x)
    idx, sims = fitted.search(x[[5, 17, 400]] * 3.0)  # any length: the search is by cosine
    assert idx[:, 0].tolist() == [5, 17, 400]
    np.testing.assert_allclose(sims[:, 0], 1.0, atol=1e-5)


def test_fewer_probes_or_candidates_lose_recall(data):
    x, exact = data
    full = recall_at_k(related_pages(x, "IVF", k=30, n_probe=16)[0], exact)
    assert recall_at_k(related_pages(x, "IVF", k=30, n_probe=1)[0], exact) < full


def test_empty_input_is_refused_with_the_shape():
    with pytest.raises(ValueError, match="non-empty"):
        RELATED.create("EXACT").fit(np.zeros((0, 4), np.float32))
