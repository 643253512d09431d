"""NGBoost with the Poisson of ``focuscrawl.outlinks.ngboost_poisson`` fits what it fits with ngboost's own,
and the fitted model survives the model store's pickling."""

from __future__ import annotations

import pickle

import numpy as np
from ngboost import NGBRegressor
from ngboost.distns import Poisson as NgboostPoisson

from focuscrawl.outlinks.ngboost_poisson import Poisson


def _fit(dist, X, y):
    return NGBRegressor(Dist=dist, n_estimators=60, learning_rate=0.03, random_state=0, verbose=False).fit(X, y)


def test_the_fit_is_ngboosts_and_it_pickles():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 6))
    y = rng.poisson(np.exp(0.6 * X[:, 0] - 0.3 * X[:, 1]))
    ours, theirs = _fit(Poisson, X, y), _fit(NgboostPoisson, X, y)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_array_equal(ours.pred_dist(X).params["mu"], theirs.pred_dist(X).params["mu"])
    dist = ours.pred_dist(X[:5])
    np.testing.assert_array_equal(dist.logpmf(y[:5]), theirs.pred_dist(X[:5]).logpmf(y[:5]))  # the frozen dist
    again = pickle.loads(pickle.dumps(ours))
    np.testing.assert_array_equal(again.predict(X), ours.predict(X))
    # another learning rate fits another model: the comparison above can fail
    other = NGBRegressor(Dist=Poisson, n_estimators=60, learning_rate=0.1, random_state=0, verbose=False).fit(X, y)
    assert not np.array_equal(other.predict(X), ours.predict(X))
