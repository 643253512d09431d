"""Estimators of content characteristics from a graph sample: NAIVE, MLE, SCE and WCE.

Seed 003 (*Fast crawling methods of exploring content distributed over large graphs*). Each estimator maps a :class:`~focuscrawl.graph.samplers.Sample`
to a :class:`Distribution` ``{value: share}`` over the contents of the graph, for one ``target``:

- ``copies``: the number of copies a content has (the seed's omega; a copy's meta carries it),
- ``label``: the content label carried by every copy (the seed's l_k, e.g. a topic);
- ``relevant``: the share of the site's pages about the project's page focus, each sampled vertex's page
  scored by the page relevance model on the live path (:func:`page_sample` makes it a content target).

Notation: draw s visits vertex v_s with sampling weight w_s ∝ π(v_s) (the sampler's stationary
probability up to a constant); c(v) are the copies held by v; n_c is the number of copies of
content c; each content has exactly one special copy. For any sampler whose draws are (asymptotically)
distributed as π, Hansen-Hurwitz gives, for any per-vertex quantity f,

    E[ (1/B) Σ_s f(v_s) / π(v_s) ] = Σ_v f(v),

and the unknown normalising constant of π cancels in a ratio of two such sums, which is why the
weights only need to be known up to a constant.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Protocol

import numpy as np

from focuscrawl.graph.access import ContentCopies
from focuscrawl.graph.distribution import ALL_TARGETS, RELEVANT, TARGETS, Distribution  # noqa: F401 - read from here too
from focuscrawl.graph.samplers import Sample
from focuscrawl.core.registry import Registry


class ContentEstimator(Protocol):
    requires_uniform: bool

    def estimate(self, sample: Sample) -> Distribution: ...


ESTIMATORS: Registry[ContentEstimator] = Registry("content estimator")


class _Estimator:
    requires_uniform = False

    def __init__(self, *, target: str = "copies") -> None:
        if target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS} (got {target!r})")
        self.target = target

    def _values(self, sample: Sample) -> np.ndarray:
        return sample.copies.copies if self.target == "copies" else sample.copies.label


def _weighted_distribution(values: np.ndarray, weights: np.ndarray, target: str) -> Distribution:
    if len(values) == 0 or weights.sum() <= 0:
        return Distribution(target)
    keys, inverse = np.unique(values, return_inverse=True)
    totals = np.bincount(inverse, weights=weights)
    return Distribution(target, dict(zip(keys.tolist(), (totals / totals.sum()).tolist())))


@ESTIMATORS.register("NAIVE")
class NaiveEstimator(_Estimator):
    """Every distinct content seen in the sample counts once (seed, abstract: the naive approach).

    Biased twice over: a content with more copies is more likely to be seen at all, and a walk
    sees the content of high-degree vertices more often."""

    def estimate(self, sample: Sample) -> Distribution:
        _, first = np.unique(sample.copies.content_id, return_index=True)
        values = self._values(sample)[first]
        return _weighted_distribution(values, np.ones(len(values)), self.target)


@ESTIMATORS.register("SCE")
class SpecialCopyEstimator(_Estimator):
    """Special copy estimator (seed, abstract): count each content through its special copy only.

    Derivation. Let f(v) = Σ_{c special at v} 1{value(c) = x}. Since each content has exactly one
    special copy, Σ_v f(v) is the number of contents with value x, and Σ_v Σ_x f(v) = |C|.
    Hansen-Hurwitz on both sums and their ratio gives

        ω̂_x = Σ_s Σ_{c ∈ c(v_s), special} 1{value(c) = x} / w_s  /  Σ_s Σ_{c ∈ c(v_s), special} 1 / w_s,

    consistent (asymptotically unbiased) for UNI, RW, MHRW and FS. It uses only the special copies,
    so it needs no copy count for a label but sees few contents per draw.
    """

    def estimate(self, sample: Sample) -> Distribution:
        special = sample.copies.special
        return _weighted_distribution(self._values(sample)[special], 1.0 / sample.weights[sample.copy_draw[special]], self.target)


@ESTIMATORS.register("WCE")
class WeightedCopyEstimator(_Estimator):
    """Weighted copy estimator (seed, abstract): every sampled copy counts, weighted by its meta.

    Derivation. Let f(v) = Σ_{c ∈ c(v)} 1{value(c) = x} / n_c. Content c has n_c copies on distinct
    vertices, so Σ_v f(v) = Σ_c 1{value(c) = x} · n_c / n_c = number of contents with value x:
    each content contributes one unit, split over its copies. Hansen-Hurwitz and the ratio give

        ω̂_x = Σ_s Σ_{c ∈ c(v_s)} 1{value(c) = x} / (w_s n_c)  /  Σ_s Σ_{c ∈ c(v_s)} 1 / (w_s n_c),

    consistent for UNI, RW, MHRW and FS, and using every copy seen (lower variance than SCE
    when contents have many copies) at the price of needing n_c in each copy's meta.
    """

    def estimate(self, sample: Sample) -> Distribution:
        copies = sample.copies
        return _weighted_distribution(self._values(sample), 1.0 / (sample.weights[sample.copy_draw] * copies.copies), self.target)


def _binomial_matrix(observed: np.ndarray, max_copies: int, p: float) -> np.ndarray:
    """P[i, j] = C(j, i) p^i q^(j-i): a content with j copies has i sampled (rows: observed i, cols: j=1..M)."""
    from scipy.stats import binom

    j = np.arange(1, max_copies + 1)
    return binom.pmf(observed[:, None], j[None, :], p)


def em_copy_distribution(sampled_copies: np.ndarray, p: float, max_copies: int, iterations: int = 300, tol: float = 1e-7) -> tuple[np.ndarray, float]:
    """EM estimate of omega_j (j = 1..M) from the numbers of sampled copies i >= 1 of the observed contents.

    Seed appendix 1.1, case 1 (alpha_i = Σ_j omega_j P_{i,j}, P_{i,j} truncated by 1 - q^j), solved as
    Duffield, Lund & Thorup, "Estimating flow distributions from sampled flow statistics" (SIGCOMM
    2003, the seed's [12]): content = flow, copy = packet. Missing data: the j of each observed content
    and the contents never observed (i = 0). E-step: an observed content with i sampled copies has
    j with posterior ∝ omega_j P_{i,j}; the expected number of unobserved contents is
    N_obs Σ_j omega_j q^j / (1 - Σ_j omega_j q^j), spread over j ∝ omega_j q^j. M-step: omega ∝ expected counts.

    Returns (omega over j = 1..M, probability that a content is observed, Σ_j omega_j (1 - q^j)).
    """
    values, counts = np.unique(sampled_copies, return_counts=True)
    P = _binomial_matrix(values, max_copies, p)
    unseen = (1.0 - p) ** np.arange(1, max_copies + 1)
    n_obs = counts.sum()
    # Start from the scaled-up counts (i sampled copies ~ i/p copies), mixed with uniform so that no
    # j starts at zero (EM's multiplicative updates never leave zero): far fewer iterations than uniform.
    scaled = np.bincount(np.minimum(np.ceil(values / p).astype(int), max_copies) - 1, weights=counts, minlength=max_copies)
    scaled /= 1.0 - unseen
    omega = 0.5 * scaled / scaled.sum() + 0.5 / max_copies
    for _ in range(iterations):
        joint = omega[None, :] * P
        expected = counts @ (joint / np.maximum(joint.sum(axis=1, keepdims=True), 1e-300))
        missed = float(omega @ unseen)
        expected = expected + n_obs * omega * unseen / max(1.0 - missed, 1e-12)
        new = expected / expected.sum()
        done = np.abs(new - omega).sum() < tol
        omega = new
        if done:
            break
    return omega, float(1.0 - omega @ unseen)


class NotEstimable(ValueError):
    """The sample holds no information for this estimate (e.g. |V| by collisions with no vertex drawn
    twice): not bad input, a crawl too small; callers skip the estimate and count it."""


def estimate_num_vertices(sample: Sample) -> float:
    """|V| from a uniform sample with replacement, by collisions (the seed's appendix 1.1 points to
    its [22] for this step; Katzir, Liberty & Somekh, "Estimating sizes of social networks via biased
    sampling", WWW 2011, uniform case): among the n(n-1)/2 pairs of draws, each pair hits the same
    vertex with probability 1/|V|, so with C such pairs |V|^ = n(n-1) / (2C).

    Ratio-unbiased as n grows (C is a sum of pair indicators); it needs a collision, about n^2/(2|V|)
    are expected, so it fails below n ~ sqrt(2|V|) draws. On a bootstrap replicate, a pair that is one
    crawl draw repeated by the resample is no collision (``Sample.origin``), and n(n-1)/2 counts the
    pairs of distinct crawl draws only, so the replicate's estimate is centred where the crawl's is."""
    if not sample.uniform:
        raise ValueError("|V| by collisions needs a uniform (UNI) sample")
    n = len(sample)
    _, counts = np.unique(sample.vertices, return_counts=True)
    _, repeats = np.unique(sample.draw_origin, return_counts=True)
    # Pairs of draws on one vertex, less the pairs that are one crawl draw repeated by a bootstrap.
    collisions = float((counts * (counts - 1) / 2).sum() - (repeats * (repeats - 1) / 2).sum())
    if collisions == 0:
        raise NotEstimable(f"no vertex drawn twice in {n} uniform draws: |V| cannot be estimated from this sample "
                         "(draw more vertices, or give MLE the known size with num_vertices='known')")
    pairs = n * (n - 1) / 2.0 - float((repeats * (repeats - 1) / 2).sum())
    return pairs / collisions


@ESTIMATORS.register("MLE")
class MaximumLikelihoodEstimator(_Estimator):
    """MLE of the seed's appendix 1.1, for UNI samples only (copies sampled independently with p = n/|V|).

    ``copies`` (case 1): the EM of :func:`em_copy_distribution` on i, the number of distinct sampled
    vertices holding a copy of each observed content; it ignores the copy count in the meta.
    ``label`` (case 2): per label l_k the same EM gives beta_{k,j}; a content with label l_k is observed
    with probability Σ_j beta_{k,j} (1 - q^j), so omega_k ∝ alpha_k / Σ_j beta_{k,j} (1 - q^j). (The seed
    writes that denominator as Σ_i Σ_j beta_{k,j} P_{i,j}; with the truncated P it would sum to one,
    so we read P there as the untruncated binomial, which is what makes the estimator correct.)
    ``max_copies`` (the seed's M) defaults to min(|V|, ceil(max_i / p)), per label for ``label``.
    EM converges slowly where p is small (the likelihood is flat: the seed finds MLE needs most
    vertices sampled), so ``iterations`` bounds the work.

    |V|: the appendix assumes it known ("this can be estimated by sampling methods proposed in
    [22]"). ``num_vertices="sample"`` (the default) estimates it from the same sample by
    :func:`estimate_num_vertices`, so the estimate uses nothing a crawler would not have;
    ``"known"`` takes ``sample.num_vertices`` (the simulation's truth), for comparison.
    """

    requires_uniform = True

    def __init__(self, *, target: str = "copies", max_copies: int | None = None, iterations: int = 300,
                 num_vertices: str = "sample") -> None:
        super().__init__(target=target)
        if num_vertices not in ("sample", "known"):
            raise ValueError(f"num_vertices must be 'sample' (estimate |V| by collisions) or 'known' (got {num_vertices!r})")
        self.max_copies = max_copies
        self.iterations = iterations
        self.num_vertices = num_vertices

    def graph_size(self, sample: Sample) -> float:
        if self.num_vertices == "sample":
            return estimate_num_vertices(sample)
        if sample.num_vertices is None:
            raise ValueError("MLE with num_vertices='known' needs the graph size (sample.num_vertices); use num_vertices='sample'")
        return float(sample.num_vertices)

    def estimate(self, sample: Sample) -> Distribution:
        if not sample.uniform:
            raise ValueError("MLE needs a uniform (UNI) sample: copies must be sampled independently with p = n/|V|")
        if len(sample.copies) == 0:
            return Distribution(self.target)
        size = self.graph_size(sample)
        _, vertex = np.unique(sample.vertices, return_inverse=True)
        contents, content = np.unique(sample.copies.content_id, return_inverse=True)
        p = min(1.0, (vertex.max() + 1) / size)
        # i_c: distinct sampled vertices holding content c (a vertex drawn twice is sampled once).
        pairs = np.unique(vertex[sample.copy_draw] * len(contents) + content)
        i_c = np.bincount(pairs % len(contents), minlength=len(contents))

        def m(i: np.ndarray) -> int:
            return self.max_copies or int(max(i.max(), min(size, np.ceil(i.max() / p))))

        if self.target == "copies":
            max_copies = m(i_c)
            omega, _ = em_copy_distribution(i_c, p, max_copies, self.iterations)
            keep = omega > 0
            return Distribution("copies", dict(zip(np.arange(1, max_copies + 1)[keep].tolist(), omega[keep].tolist())))
        labels = np.empty(len(contents), dtype=sample.copies.label.dtype)
        labels[content] = sample.copies.label
        totals = {}
        for label in np.unique(labels):
            mine = i_c[labels == label]
            _, observed = em_copy_distribution(mine, p, m(mine), self.iterations)
            totals[label] = len(mine) / observed
        norm = sum(totals.values())
        return Distribution("label", {k: v / norm for k, v in totals.items()})


RELEVANT_LABELS = ("relevant", "other")


def page_sample(sample: Sample) -> Sample | None:
    """The draws of ``sample`` whose vertex's page was scored, each holding that page as its one content:
    content id the vertex, label ``relevant`` or ``other`` (relevance at or above the page focus's
    threshold, or below), one copy, special. The content estimators on it estimate, for target ``label``,
    the share of the site's pages that are relevant: SCE and WCE both reduce to the Hansen-Hurwitz ratio
    Σ_s 1{relevant(v_s)} / w_s / Σ_s 1 / w_s of the module docstring, NAIVE counts each page seen once and
    MLE (UNI) corrects for pages never drawn. Unscored draws are left out, which assumes a page's fetch
    fails independently of its relevance. None when no draw was scored."""
    if sample.relevant is None:
        return None
    scored = np.flatnonzero(~np.isnan(sample.relevant))
    if not len(scored):
        return None
    part = sample.take(scored)
    n = len(part)
    copies = ContentCopies(part.vertices.astype(str),
                           np.where(part.relevant >= 0.5, RELEVANT_LABELS[0], RELEVANT_LABELS[1]).astype(str),
                           np.ones(n, dtype=np.int64), np.ones(n, dtype=bool))
    return Sample(part.vertices, part.weights, np.arange(n + 1, dtype=np.int64), copies, part.uniform,
                  part.num_vertices, part.origin, part.relevant)


def estimates_of(sample: Sample, estimators: Iterable[str],
                 targets: Iterable[str] = TARGETS) -> Iterator[tuple[str, str, Distribution | None]]:
    """``(estimator, target, distribution)`` for each pair that applies to ``sample`` (an estimator that
    needs a uniform sample is left out on any other); the distribution is None where the sample holds no
    information for it (:class:`NotEstimable`, e.g. MLE with no vertex drawn twice), for callers to count.
    Target ``relevant`` is the ``label`` target of :func:`page_sample`, left out when no page was scored."""
    for name in estimators:
        for target in targets:
            if target not in ALL_TARGETS:
                raise ValueError(f"target must be one of {ALL_TARGETS} (got {target!r})")
            part = page_sample(sample) if target == RELEVANT else sample
            if part is None:
                continue
            estimator = ESTIMATORS.create(name, target="label" if target == RELEVANT else target)
            if estimator.requires_uniform and not part.uniform:
                continue
            try:
                found = estimator.estimate(part)
            except NotEstimable:
                found = None
            if found is not None and target == RELEVANT:
                found = Distribution(RELEVANT, found.shares)
            yield name, target, found
