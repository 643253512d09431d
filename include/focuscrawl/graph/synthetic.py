"""A generated graph with content for simulations: power-law degrees, Zipf copy counts, degree-biased
placement, and labels whose dependence on exposure is a knob (``label_correlation``).

Seed 003, *Fast crawling methods of exploring content distributed over large graphs* (abstract): naive sampling is biased because what a crawler sees
depends on where it walks. How much it is biased on a *label* depends on how strongly the label goes
with what makes a content visible: its number of copies and the degrees of the vertices holding them.
The generator makes that strength a parameter so that the estimators can be compared along it
(docs/loops/graph.md, the sweep): ``label_correlation = 0`` gives labels independent of copies and degrees
(naive is then unbiased on labels), ``1`` gives labels that are quantiles of the exposure
``log Σ_{holders v} (deg(v) + 1)`` (naive's bias is largest); in between, each content keeps its
exposure label with that probability and draws a uniform label otherwise. The true label shares are
``1/num_labels`` at every strength (quantile buckets), so only the dependence changes along a sweep.

Where each default comes from (none is set from a paper's verdict):

- ``exponent = 2.3``: a neutral value inside the range 2-3 measured for the degree distributions of
  online social networks; ``mean_degree = 8``: a neutral small-graph choice (the sweep does not
  depend on it beyond mixing time).
- ``zipf = 2.0``, ``max_copies = 200``: copy counts heavy-tailed with a finite mean, a neutral choice
  (Wikispeedia's in-links, the real content graph here, have a heavier tail; see its loader).
- ``degree_bias = 1.0``: copies land on vertices with probability ∝ (deg + 1), the neutral linear
  choice between uniform placement (0) and placement concentrated on hubs (> 1).
- ``label_correlation = 0.5``: the middle of the swept range [0, 1], a stated neutral choice.
"""

from __future__ import annotations

import numpy as np

from focuscrawl.graph.access import InMemoryGraph


def chung_lu_edges(num_vertices: int, mean_degree: float, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """Edges of a Chung-Lu graph: expected degrees drawn from a power law with the given exponent."""
    expected = (1.0 - rng.random(num_vertices)) ** (-1.0 / (exponent - 1.0))
    expected *= mean_degree / expected.mean()
    p = expected / expected.sum()
    m = int(num_vertices * mean_degree / 2)
    return np.stack([rng.choice(num_vertices, m, p=p), rng.choice(num_vertices, m, p=p)], axis=1)


def exposure_labels(exposure: np.ndarray, num_labels: int, correlation: float, rng: np.random.Generator) -> np.ndarray:
    """Label index per content: the exposure quantile bucket with probability ``correlation``, else uniform.

    Ties in exposure are broken at random so that the buckets have equal sizes."""
    if not 0.0 <= correlation <= 1.0:
        raise ValueError(f"label_correlation must be in [0, 1] (got {correlation})")
    n = len(exposure)
    order = np.lexsort((rng.random(n), exposure))
    bucket = np.empty(n, dtype=np.int64)
    bucket[order] = np.arange(n) * num_labels // max(n, 1)
    keep = rng.random(n) < correlation
    return np.where(keep, bucket, rng.integers(num_labels, size=n))


def synthetic_graph(
    num_vertices: int = 3000,
    num_contents: int = 4000,
    mean_degree: float = 8.0,
    exponent: float = 2.3,
    zipf: float = 2.0,
    max_copies: int = 200,
    degree_bias: float = 1.0,
    num_labels: int = 4,
    label_correlation: float = 0.5,
    seed: int = 0,
) -> InMemoryGraph:
    """A seeded power-law graph with contents; labels ``L0..L{k-1}``, ``L{k-1}`` the most exposed when correlated.

    The graph, the copies and their placement depend on ``seed`` only, not on ``label_correlation``:
    a sweep over the correlation changes the labels and nothing else."""
    rng = np.random.default_rng(seed)
    edges = chung_lu_edges(num_vertices, mean_degree, exponent, rng)
    degree = np.bincount(edges.ravel(), minlength=num_vertices).astype(float)
    copies = np.minimum(rng.zipf(zipf, num_contents), max_copies)
    holder_p = (degree + 1.0) ** degree_bias
    holder_p /= holder_p.sum()
    copy_content = np.repeat(np.arange(num_contents), copies)
    copy_vertex = rng.choice(num_vertices, len(copy_content), p=holder_p)
    # The special copy is the first listed one: shuffle so it sits on a random holder.
    order = rng.permutation(len(copy_content))
    exposure = np.log(np.bincount(copy_content, weights=degree[copy_vertex] + 1.0, minlength=num_contents))
    label_rng = np.random.default_rng([seed, 1])
    label_index = exposure_labels(exposure, num_labels, label_correlation, label_rng)
    labels = np.array([f"L{k}" for k in label_index], dtype=str)
    return InMemoryGraph.build(num_vertices, edges, copy_vertex[order], copy_content[order], labels)


def label_exposure_correlation(graph: InMemoryGraph) -> float:
    """Spearman correlation, over contents, between the label index and the exposure
    ``Σ_{holders} (deg + 1)``: the measured x-axis of the sweep."""
    from scipy.stats import spearmanr

    degree = graph.degrees.astype(float)
    holder = np.repeat(np.arange(graph.num_vertices), np.diff(graph.copy_ptr))
    exposure = np.bincount(graph.copy_content, weights=degree[holder] + 1.0, minlength=len(graph.content_label))
    index = np.array([int(str(l)[1:]) for l in graph.content_label])
    return float(spearmanr(index, exposure).statistic)
