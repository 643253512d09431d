"""Near-duplicate detection (focuscrawl.core.dedup) on a planted test set: exact copies, 90% and 50% overlap.

The base pages are the synthetic snapshots' texts (four topics, so many pages share a vocabulary);
each planted page copies one base page's first 100%, 90% or 50% of words and takes the rest from
another base page. With 5-word shingles a 90% copy has Jaccard ~0.81 to its original and a 50% copy
~0.33, so at the threshold 0.7 the first two kinds are near-duplicates and the third is not.

What is asserted is what the parameters imply, not a measured figure: every reported pair has an
exact Jaccard at or above the threshold; a planted pair below it is never reported; an exact copy
always is (LSH makes identical signatures a candidate with probability 1); the 90% copies missed are
no more than the LSH's candidate probability at their Jaccard allows (the 99.9% quantile of the
binomial). The measured precision and recall are printed (README "Near-duplicates").
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from focuscrawl.core.dedup import (DEFAULT, NearDuplicateIndex, NearDuplicateParams, clusters, decode_signature,
                              encode_signature, jaccard, near_duplicate_pairs, precision_recall, shingles, signature)
from focuscrawl.outlinks.synthetic import generate_snapshots

KINDS = {"exact": 1.0, "90": 0.9, "50": 0.5}


def planted_set(n_base: int = 240, per_kind: int = 30, seed: int = 3):
    """``(texts, planted)``: ``{url: text}`` and ``{(original, copy): kind}``."""
    snaps = generate_snapshots(n_pages=n_base, n_periods=1, n_topics=4, n_sites=5, words_per_page=200, seed=seed)
    base = dict(zip(snaps["url"], snaps["text"]))
    urls = sorted(base)
    rng = np.random.default_rng(seed)
    order = list(rng.permutation(len(urls)))
    texts, planted = dict(base), {}
    for kind, keep in KINDS.items():
        for j in range(per_kind):
            original, donor = urls[order.pop()], urls[order.pop()]
            words, other = base[original].split(), base[donor].split()
            k = round(keep * len(words))
            copy = f"http://copies.example/{kind}/{j}"
            texts[copy] = " ".join(words[:k] + other[:len(words) - k])
            planted[(original, copy)] = kind
    return texts, planted


@pytest.fixture(scope="module")
def planted():
    return planted_set()


def exact_j(texts, pair):
    return jaccard(shingles(texts[pair[0]]), shingles(texts[pair[1]]))


def miss_bound(probabilities: list[float], quantile: float = 0.999) -> int:
    """At most this many misses among pairs each found with the given probability (binomial at the worst one)."""
    return int(binom.ppf(quantile, len(probabilities), 1.0 - min(probabilities))) if probabilities else 0


def test_the_planted_kinds_sit_where_the_threshold_says(planted):
    texts, truth = planted
    by_kind = {k: [exact_j(texts, p) for p, kind in truth.items() if kind == k] for k in KINDS}
    assert min(by_kind["exact"]) == 1.0
    assert DEFAULT.threshold < min(by_kind["90"]) and max(by_kind["90"]) < 1.0
    assert max(by_kind["50"]) < DEFAULT.threshold
    # same-topic base pages share words, not 5-word runs: no base pair is a near-duplicate
    base = [u for u in texts if not u.startswith("http://copies.example/")]
    sets = {u: shingles(texts[u]) for u in base}
    assert max(jaccard(sets[a], sets[b]) for i, a in enumerate(base) for b in base[i + 1:]) < DEFAULT.threshold


def test_batch_pairs_find_what_the_threshold_implies(planted, capsys):
    texts, truth = planted
    pairs = near_duplicate_pairs(texts)
    found = {(p.url_a, p.url_b) for p in pairs}
    assert all(p.jaccard >= DEFAULT.threshold for p in pairs)  # the exact check keeps nothing below
    assert all(p.url_a < p.url_b for p in pairs)

    def hit(pair):
        return tuple(sorted(pair)) in found

    kinds = {k: [p for p, kind in truth.items() if kind == k] for k in KINDS}
    assert all(hit(p) for p in kinds["exact"])
    assert not any(hit(p) for p in kinds["50"])
    missed = [p for p in kinds["90"] if not hit(p)]
    assert len(missed) <= miss_bound([DEFAULT.candidate_probability(exact_j(texts, p)) for p in kinds["90"]])
    positives = kinds["exact"] + kinds["90"]
    precision, recall = precision_recall(found, positives)
    # Every found pair is a planted positive: the base set has none (test above) and no 50% copy is found.
    assert precision == 1.0
    with capsys.disabled():
        print(f"\nnear-duplicates (batch, threshold {DEFAULT.threshold}, bands {DEFAULT.bands}): "
              f"{len(pairs)} pairs among {len(texts)} pages; precision {precision:.3f}, recall {recall:.3f} "
              f"(exact {sum(map(hit, kinds['exact']))}/{len(kinds['exact'])}, 90% {sum(map(hit, kinds['90']))}/"
              f"{len(kinds['90'])}, 50% {sum(map(hit, kinds['50']))}/{len(kinds['50'])})")


def test_crawlers_index_skips_what_the_estimate_implies(planted, capsys):
    """The crawlers' online check: the base pages fetched first, then each planted copy."""
    texts, truth = planted
    index = NearDuplicateIndex()
    for url, text in texts.items():
        if not url.startswith("http://copies.example/"):
            assert index.check(text) is None  # no base page near-duplicates an earlier one
            index.add(url, text)
    skipped = {}
    for (original, copy), kind in truth.items():
        match = index.check(texts[copy])
        skipped[(original, copy)] = match
        if match is not None:
            assert match.estimated_jaccard >= DEFAULT.threshold
    kinds = {k: [p for p, kind in truth.items() if kind == k] for k in KINDS}
    assert all(skipped[p] is not None and skipped[p].duplicate_of == p[0] for p in kinds["exact"])
    assert not any(skipped[p] for p in kinds["50"])
    n, t = DEFAULT.num_perm, DEFAULT.threshold
    # found = a candidate, and the estimate (Binomial(num_perm, J) / num_perm) at or above the threshold
    p_found = [DEFAULT.candidate_probability(j) * binom.sf(np.ceil(t * n) - 1, n, j)
               for j in (exact_j(texts, p) for p in kinds["90"])]
    missed = [p for p in kinds["90"] if skipped[p] is None]
    assert len(missed) <= miss_bound(p_found)
    precision, recall = precision_recall([p for p, m in skipped.items() if m], kinds["exact"] + kinds["90"])
    with capsys.disabled():
        print(f"near-duplicates (crawler index, estimate >= {t}): skip precision {precision:.3f}, recall {recall:.3f}")


def test_clusters_are_connected_components_named_by_their_smallest_url():
    assert clusters([("b", "c"), ("a", "b"), ("x", "y")]) == {"a": "a", "b": "a", "c": "a", "x": "x", "y": "x"}
    assert clusters([]) == {}


def test_short_and_empty_pages_are_not_judged():
    index = NearDuplicateIndex()
    assert index.add("u", "page not found") is None and len(index) == 0
    assert signature("") is None and shingles("") == set()
    assert shingles("One two", 5) == {"one two"}
    # a row landed without a body: None, or NaN in pandas' string columns (what mapInPandas hands the Spark job)
    for missing in (None, float("nan")):
        assert signature(missing) is None and shingles(missing) == set()


def test_signatures_travel_and_parameters_check_themselves():
    text = " ".join(f"w{i}" for i in range(60))
    sig = signature(text)
    assert sig.dtype == np.uint32 and len(sig) == DEFAULT.num_perm
    assert np.array_equal(decode_signature(encode_signature(sig)), sig)
    assert np.array_equal(signature(text), sig)  # one seed: the same in every process
    assert DEFAULT.candidate_probability(1.0) == 1.0
    with pytest.raises(ValueError, match="threshold"):
        NearDuplicateParams(threshold=1.5)
