"""Content over large graphs: sample vertices under a query budget, estimate content statistics without bias.

Implements seed 003 ("Fast crawling methods of exploring content distributed
over large graphs"): a site is crawled through :class:`~focuscrawl.graph.access.GraphAccess`
(in memory or over HTTP), a sampler from :data:`~focuscrawl.graph.samplers.SAMPLERS` (UNI, RW, MHRW,
FS) collects a :class:`~focuscrawl.graph.samplers.Sample` with the sampling weight of every draw, and
an estimator from :data:`~focuscrawl.graph.estimators.ESTIMATORS` (NAIVE, MLE, SCE, WCE) turns it into
the distribution of the number of copies per content (the seed's omega) or of a content label.
"""
