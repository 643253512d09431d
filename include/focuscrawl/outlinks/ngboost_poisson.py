"""NGBoost's Poisson distribution, with its scipy distribution frozen only when read.

NGBoost (Duan et al., "NGBoost: Natural Gradient Boosting for Probabilistic Prediction", ICML 2020,
Section 2.4, the line search) builds a distribution object for every trial step of every boosting
iteration: about 6,000 in one fit of 300 iterations. ngboost's own ``Poisson`` freezes a
``scipy.stats.poisson`` in each constructor, which builds a whole scipy distribution object, about 1 ms:
40% of the CPU of ``outlinks_train`` on the world's lake (6 of 15 s). The natural gradient needs only
``mu``, and the log score is the same ``logpmf`` without the frozen object, so the fits are the same
(``tests/outlinks/test_ngboost_poisson.py``). Its own module so that stored models unpickle by name.
"""

from __future__ import annotations

import numpy as np
from ngboost.distns.poisson import Poisson as _NgboostPoisson
from ngboost.distns.poisson import PoissonLogScore as _NgboostPoissonLogScore
from ngboost.scores import LogScore
from scipy.stats import poisson


class PoissonLogScore(_NgboostPoissonLogScore, LogScore):
    # LogScore last: ngboost finds a distribution's implementation of a score by its last base class.
    def score(self, Y):
        return -poisson.logpmf(Y, self.mu)


class Poisson(_NgboostPoisson):
    """ngboost's ``Poisson``, whose ``dist`` is frozen when read, not when built."""

    scores = [PoissonLogScore]

    def __init__(self, params):  # noqa: D107 - ngboost's, without freezing scipy's distribution
        self._params = params
        self.logmu = params[0]
        self.mu = np.exp(self.logmu)

    @property
    def dist(self):
        return poisson(mu=self.mu)
