"""A generated graph with content for simulations: power-law degrees, Zipf copy counts, degree-biased placement.

Seed ``003_3ce707ea6f24f484.txt`` (abstract): naive sampling is biased because what a crawler sees
depends on where it walks. The generator builds that situation on purpose: copies land on vertices
with probability ∝ degree^``degree_bias`` (popular users share more), copy counts are Zipf, and the
label of a content leans on its copy count, so both omega and the label distribution are biased
under a naive count.
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


def synthetic_graph(
    num_vertices: int = 3000,
    num_contents: int = 4000,
    mean_degree: float = 8.0,
    exponent: float = 2.3,
    zipf: float = 2.0,
    max_copies: int = 200,
    degree_bias: float = 1.0,
    num_labels: int = 4,
    seed: int = 0,
) -> InMemoryGraph:
    """A seeded power-law graph with contents; labels ``L0..L{k-1}``, higher labels for more copies."""
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
    bucket = np.minimum(np.log2(copies).astype(int), num_labels - 1)
    noisy = rng.random(num_contents) < 0.4
    label_index = np.where(noisy, rng.integers(num_labels, size=num_contents), bucket)
    labels = np.array([f"L{k}" for k in label_index], dtype=str)
    return InMemoryGraph.build(num_vertices, edges, copy_vertex[order], copy_content[order], labels)
