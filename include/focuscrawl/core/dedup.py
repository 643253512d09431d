"""Near-duplicate pages: word shingles, MinHash and LSH (datasketch), one parameter object.

Seed 002 (*Look back, look around*), Section 2 measures content similarity "as the overlap in word
n-grams (shingles) between the page variants"; near-duplicate detection in ACHE and Nutch rests on
the same idea (Broder's resemblance). Here a page's text (``page_snapshots.text``: the visible
text without its outlinks, :func:`focuscrawl.outlinks.revisit.page_content`) becomes the set of its
lower-cased ``shingle_words``-word shingles; two pages are near-duplicates when the Jaccard
similarity of their shingle sets is at least ``threshold``.

The threshold, 0.7, is what "the same page with a little changed" means in shingles: two pages
of equal length that share one stretch of fraction ``o`` of their text have J = o / (2 - o), so J >= 0.7
is a shared stretch of at least 82% of the text; a page that shares 90% of its text with another
(J ~= 0.82) is a near-duplicate, one that shares half (J ~= 0.33) is not.

MinHash (``num_perm`` permutations, one fixed ``seed`` so that every process and executor draws
the same ones) estimates J with a standard error of sqrt(J(1 - J) / num_perm), 0.04 at J = 0.7
with 128; LSH bands the signature into ``b`` bands of ``r`` rows, and a pair becomes a candidate with
probability 1 - (1 - J^r)^b (:meth:`NearDuplicateParams.candidate_probability`). The bands are
datasketch's optimum for the threshold with false negatives weighted 0.8 and false positives 0.2,
because every candidate is checked afterwards: (b, r) = (18, 7), so a pair at J = 0.82 is a
candidate with probability 0.994 and one at J = 0.33 with 0.008.

Two users:

- the batch side (``spark_jobs/near_duplicates.py``, :func:`near_duplicate_pairs`): LSH candidates
  from the bands of every page's latest text, each candidate then checked on its exact Jaccard,
  kept at J >= threshold, grouped into clusters (connected components) -> ``near_duplicates``;
- the crawlers (:class:`NearDuplicateIndex`): the revisitor and the source crawler, with the project
  switch ``skip_near_duplicates`` on, skip a new page whose MinHash estimate against a page they
  fetched before is at least the threshold (no exact check there: they keep signatures, not texts).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Iterable, Iterator, NamedTuple

from focuscrawl.core.params import knob

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class NearDuplicateParams:
    """The decisions of near-duplicate detection, declared once (the DAG's Params and the job's flags read them)."""

    shingle_words: int = knob(5, "words per shingle (w-shingles)", minimum=1)
    num_perm: int = knob(128, "MinHash permutations", minimum=16)
    threshold: float = knob(0.7, "shingle Jaccard similarity at or above which two pages are near-duplicates",
                            exclusiveMinimum=0, maximum=1)
    min_words: int = knob(20, "shorter pages are never judged (a few words say too little)", minimum=1)
    seed: int = knob(1, "MinHash permutations' seed: the same in every process")
    scheme: str = knob("affine32", "datasketch 2.0's permutation scheme (signatures of two schemes never compare)")
    false_negative_weight: float = knob(0.8, "LSH bands chosen for recall: candidates are checked afterwards",
                                        exclusiveMinimum=0, exclusiveMaximum=1)

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}; e.g. 0.7")
        if self.shingle_words < 1 or self.num_perm < 16 or self.min_words < 1:
            raise ValueError("shingle_words and min_words must be >= 1 and num_perm >= 16 (e.g. 5, 20, 128)")
        if not 0.0 < self.false_negative_weight < 1.0:
            raise ValueError(f"false_negative_weight must be in (0, 1), got {self.false_negative_weight}")

    @cached_property
    def bands(self) -> tuple[int, int]:
        """``(b, r)``: datasketch's optimal banding for the threshold and the weights."""
        from datasketch.lsh import _optimal_param

        fn = self.false_negative_weight
        b, r = _optimal_param(self.threshold, self.num_perm, 1.0 - fn, fn)
        return int(b), int(r)

    def candidate_probability(self, jaccard: float) -> float:
        """Probability that LSH makes a pair of Jaccard ``jaccard`` a candidate: 1 - (1 - J^r)^b."""
        b, r = self.bands
        return 1.0 - (1.0 - jaccard ** r) ** b

    def to_args(self) -> list[str]:
        return ["--shingle-words", str(self.shingle_words), "--num-perm", str(self.num_perm),
                "--threshold", str(self.threshold), "--min-words", str(self.min_words)]


DEFAULT = NearDuplicateParams()
KNOBS = ("threshold", "num_perm", "shingle_words", "min_words")  # what spark_jobs/near_duplicates.py takes


def _tokens(text) -> list[str]:
    """Lower-cased ``\\w+`` tokens; a missing text (None, or the NaN pandas' string columns hold) has none."""
    return _WORD.findall(text.lower()) if isinstance(text, str) else []


def shingles(text: str | None, words: int = DEFAULT.shingle_words) -> set[str]:
    """The set of ``words``-word shingles of ``text`` (lower-cased ``\\w+`` tokens); a text shorter
    than one shingle is one shingle of all its words; no words, no shingles."""
    tokens = _tokens(text)
    if len(tokens) <= words:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i:i + words]) for i in range(len(tokens) - words + 1)}


def judged(text: str | None, params: NearDuplicateParams = DEFAULT) -> bool:
    """Whether a page is long enough to be judged at all (``min_words``)."""
    return len(_tokens(text)) >= params.min_words


def jaccard(a: set, b: set) -> float:
    """Exact Jaccard similarity of two shingle sets (0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


class _Hasher:
    """MinHash signatures with one set of permutations, drawn once per process and parameter set."""

    _cache: dict[tuple[int, int, str], object] = {}

    def __init__(self, params: NearDuplicateParams) -> None:
        from datasketch import MinHash

        key = (params.num_perm, params.seed, params.scheme)
        if key not in self._cache:
            self._cache[key] = MinHash(num_perm=params.num_perm, seed=params.seed, scheme=params.scheme).permutations
        self.params, self.permutations = params, self._cache[key]
        self._minhash = MinHash

    def signature(self, text: str | None) -> np.ndarray | None:
        """The page's MinHash signature (``num_perm`` uint32), None when the page is not judged."""
        if not judged(text, self.params):
            return None
        m = self._minhash(num_perm=self.params.num_perm, seed=self.params.seed, permutations=self.permutations,
                          scheme=self.params.scheme)
        m.update_batch([s.encode("utf-8") for s in shingles(text, self.params.shingle_words)])
        return m.hashvalues.astype(np.uint32)


def signature(text: str | None, params: NearDuplicateParams = DEFAULT) -> np.ndarray | None:
    return _Hasher(params).signature(text)


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """MinHash's estimate of J: the share of permutations whose minima agree."""
    return float(np.mean(np.asarray(a) == np.asarray(b)))


def encode_signature(sig: np.ndarray) -> str:
    """A signature as base64 (for a changelog record: the source crawler restores its index from it)."""
    return base64.b64encode(np.asarray(sig, dtype="<u4").tobytes()).decode("ascii")


def decode_signature(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<u4").astype(np.uint32)


class Match(NamedTuple):
    duplicate_of: str
    estimated_jaccard: float


class NearDuplicateIndex:
    """The pages a crawler fetched, as MinHash signatures in an LSH index (datasketch ``MinHashLSH``).

    :meth:`check` answers whether a page is a near-duplicate of one added before (the best
    candidate whose estimate is at least the threshold); :meth:`add` remembers a fetched page.
    Memory: one uint32 signature (512 bytes at 128 permutations) and ``b`` band keys per page.
    """

    def __init__(self, params: NearDuplicateParams = DEFAULT) -> None:
        from datasketch import MinHash, MinHashLSH

        self.params = params
        self.hasher = _Hasher(params)
        self.lsh = MinHashLSH(threshold=params.threshold, num_perm=params.num_perm, params=params.bands)
        self.signatures: dict[str, np.ndarray] = {}
        self._minhash = MinHash

    def __len__(self) -> int:
        return len(self.signatures)

    def __contains__(self, key: str) -> bool:
        return key in self.signatures

    def _as_minhash(self, sig: np.ndarray):
        return self._minhash(num_perm=self.params.num_perm, seed=self.params.seed, hashvalues=sig,
                             permutations=self.hasher.permutations, scheme=self.params.scheme)

    def add(self, key: str, text: str | None = None, sig: np.ndarray | None = None) -> np.ndarray | None:
        """Remember a fetched page (by its text or its signature); returns the signature (None: not judged)."""
        if key in self.signatures:
            return self.signatures[key]
        sig = self.hasher.signature(text) if sig is None else np.asarray(sig, dtype=np.uint32)
        if sig is None:
            return None
        self.lsh.insert(key, self._as_minhash(sig))
        self.signatures[key] = sig
        return sig

    def check(self, text: str | None = None, sig: np.ndarray | None = None, exclude: str | None = None) -> Match | None:
        """The page this text near-duplicates (the highest estimate at or above the threshold), or None."""
        sig = self.hasher.signature(text) if sig is None else sig
        if sig is None or not self.signatures:
            return None
        best: Match | None = None
        for key in self.lsh.query(self._as_minhash(sig)):
            if key == exclude:
                continue
            est = estimated_jaccard(sig, self.signatures[key])
            if est >= self.params.threshold and (best is None or (est, best.duplicate_of) > (best.estimated_jaccard, key)):
                best = Match(key, est)
        return best


# -- the batch side -----------------------------------------------------------------------------

class Pair(NamedTuple):
    url_a: str
    url_b: str
    estimated_jaccard: float
    jaccard: float


def candidate_pairs(signatures: dict[str, np.ndarray], params: NearDuplicateParams = DEFAULT) -> set[tuple[str, str]]:
    """Pairs ``(a, b)``, a < b, that share at least one LSH band (the rows of the banding, hashed)."""
    b, r = params.bands
    buckets: dict[tuple[int, bytes], list[str]] = {}
    for url, sig in signatures.items():
        for band in range(b):
            buckets.setdefault((band, sig[band * r:(band + 1) * r].tobytes()), []).append(url)
    out: set[tuple[str, str]] = set()
    for urls in buckets.values():
        if len(urls) > 1:
            urls = sorted(urls)
            out.update((x, y) for i, x in enumerate(urls) for y in urls[i + 1:])
    return out


def near_duplicate_pairs(texts: dict[str, str], params: NearDuplicateParams = DEFAULT) -> list[Pair]:
    """Every pair of pages whose exact Jaccard is at least the threshold, among the LSH candidates
    (the reference the Spark job must agree with, and what the crawlers' skip is measured against)."""
    hasher = _Hasher(params)
    sigs = {u: s for u, s in ((u, hasher.signature(t)) for u, t in texts.items()) if s is not None}
    sets = {u: shingles(texts[u], params.shingle_words) for u in sigs}
    pairs = []
    for a, b in sorted(candidate_pairs(sigs, params)):
        exact = jaccard(sets[a], sets[b])
        if exact >= params.threshold:
            pairs.append(Pair(a, b, estimated_jaccard(sigs[a], sigs[b]), exact))
    return pairs


def clusters(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{url: cluster id}`` of the connected components of the pairs; a cluster's id is its smallest URL
    (stable from run to run while the cluster keeps that page)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    pairs = list(pairs)
    urls = sorted({u for p in pairs for u in p[:2]})
    if not urls:
        return {}
    index = {u: i for i, u in enumerate(urls)}
    rows = [index[p[0]] for p in pairs]
    cols = [index[p[1]] for p in pairs]
    graph = coo_matrix((np.ones(len(pairs)), (rows, cols)), shape=(len(urls), len(urls)))
    _, labels = connected_components(graph, directed=False)
    first: dict[int, str] = {}
    for u in urls:  # sorted: the first URL seen of a component is its smallest
        first.setdefault(int(labels[index[u]]), u)
    return {u: first[int(labels[index[u]])] for u in urls}


def precision_recall(found: Iterable[tuple[str, str]], truth: Iterable[tuple[str, str]]) -> tuple[float, float]:
    """Precision and recall of found pairs against true pairs (order within a pair ignored)."""
    f = {tuple(sorted(p[:2])) for p in found}
    t = {tuple(sorted(p[:2])) for p in truth}
    hit = len(f & t)
    return (hit / len(f) if f else 1.0), (hit / len(t) if t else 1.0)


# -- Spark (pyspark imported inside) -----------------------------------------------------------

def spark_near_duplicates(latest: "DataFrame", params: NearDuplicateParams = DEFAULT) -> "DataFrame":
    """Pages (url, as_of_period, text) -> ``near_duplicates`` rows (url_a, url_b, estimated_jaccard, jaccard,
    cluster_id, as_of_period): signatures and their bands computed per partition (``mapInPandas``),
    candidates from a join on equal bands, each checked on its exact Jaccard in a second
    ``mapInPandas``; the clusters of the few pairs kept are found on the driver."""
    import pandas as pd
    from pyspark.sql import functions as F

    spark = latest.sparkSession
    b, r = params.bands

    def bands(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        hasher = _Hasher(params)
        for batch in batches:
            out = []
            for url, text in zip(batch["url"], batch["text"]):
                sig = hasher.signature(text)
                if sig is not None:
                    out += [(url, band, sig[band * r:(band + 1) * r].tobytes().hex()) for band in range(b)]
            yield pd.DataFrame(out, columns=["url", "band", "key"])

    keyed = latest.mapInPandas(bands, "url string, band int, key string")
    left, right = keyed.alias("l"), keyed.alias("r")
    candidates = (left.join(right, (F.col("l.band") == F.col("r.band")) & (F.col("l.key") == F.col("r.key"))
                            & (F.col("l.url") < F.col("r.url")))
                  .select(F.col("l.url").alias("url_a"), F.col("r.url").alias("url_b")).distinct())
    texts = latest.select("url", "text", "as_of_period")
    joined = (candidates.join(texts.withColumnsRenamed({"url": "url_a", "text": "text_a", "as_of_period": "period_a"}),
                              "url_a")
              .join(texts.withColumnsRenamed({"url": "url_b", "text": "text_b", "as_of_period": "period_b"}), "url_b"))

    def check(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        hasher = _Hasher(params)
        for batch in batches:
            out = []
            for a, b_, ta, tb, pa_, pb in zip(batch["url_a"], batch["url_b"], batch["text_a"], batch["text_b"],
                                              batch["period_a"], batch["period_b"]):
                exact = jaccard(shingles(ta, params.shingle_words), shingles(tb, params.shingle_words))
                if exact >= params.threshold:
                    est = estimated_jaccard(hasher.signature(ta), hasher.signature(tb))
                    out.append((a, b_, est, exact, int(max(pa_, pb))))
            yield pd.DataFrame(out, columns=["url_a", "url_b", "estimated_jaccard", "jaccard", "as_of_period"])

    pairs = joined.mapInPandas(check, "url_a string, url_b string, estimated_jaccard double, jaccard double, "
                                      "as_of_period int").toPandas()
    ids = clusters(zip(pairs["url_a"], pairs["url_b"]))
    pairs["cluster_id"] = [ids[u] for u in pairs["url_a"]]
    pairs = pairs.sort_values(["cluster_id", "url_a", "url_b"], ignore_index=True)
    return spark.createDataFrame(
        pairs[["url_a", "url_b", "estimated_jaccard", "jaccard", "cluster_id", "as_of_period"]],
        "url_a string, url_b string, estimated_jaccard double, jaccard double, cluster_id string, as_of_period int")
