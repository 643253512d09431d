"""Content embedding: TF-IDF then LSA (seed 002, Section 7, "Embedding").

Each page's text becomes a TF-IDF vector; LSA reduces the large sparse matrix to a small dense one
with randomised truncated SVD. Vectors are L2-normalised so that the cosine similarity of two pages
is their dot product, which is what the related-pages search multiplies.
"""

from __future__ import annotations

import numpy as np

from focuscrawl.outlinks.params import DEFAULT


def normalise_rows(x: np.ndarray) -> np.ndarray:
    """Unit-length rows (zero rows stay zero), float32 for BLAS speed."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1, norms)


class LsaEmbedder:
    """TF-IDF + truncated SVD; ``fit`` on a sample of pages, ``transform`` any page (per partition in Spark)."""

    def __init__(self, dimensions: int = DEFAULT.dimensions, max_features: int = 50_000, min_df: int = 2, seed: int = 0) -> None:
        self.dimensions = dimensions
        self.max_features = max_features
        self.min_df = min_df
        self.seed = seed

    def fit(self, texts: list[str]) -> "LsaEmbedder":
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        min_df = self.min_df if len(texts) >= 10 * self.min_df else 1
        self.tfidf_ = TfidfVectorizer(max_features=self.max_features, min_df=min_df, sublinear_tf=True,
                                      dtype=np.float32)
        matrix = self.tfidf_.fit_transform(texts)
        # TruncatedSVD needs fewer components than terms; tiny corpora get what they can hold.
        k = max(1, min(self.dimensions, matrix.shape[1] - 1, matrix.shape[0] - 1))
        self.svd_ = TruncatedSVD(n_components=k, algorithm="randomized", random_state=self.seed)
        self.svd_.fit(matrix)
        return self

    def transform(self, texts: list[str]) -> np.ndarray:
        """Unit-length vectors of ``dimensions`` columns (zero-padded when the corpus held fewer)."""
        dense = self.svd_.transform(self.tfidf_.transform(texts))
        if dense.shape[1] < self.dimensions:
            dense = np.hstack([dense, np.zeros((dense.shape[0], self.dimensions - dense.shape[1]))])
        return normalise_rows(dense)

    def fit_transform(self, texts: list[str]) -> np.ndarray:
        return self.fit(texts).transform(texts)
