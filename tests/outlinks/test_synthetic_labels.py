"""The synthetic world's hidden link labels (``labelled_snapshots``): beside the snapshots, never in the
columns the live path reads; the seed-002 worlds of ``generate_snapshots`` unchanged; URLs that carry the
label only noisily."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest

from focuscrawl.lake.decision import DECISION_COLUMN_NAMES
from focuscrawl.outlinks.synthetic import SNAPSHOT_COLUMNS, LinkLabels, generate_snapshots, labelled_snapshots
from focuscrawl.outlinks.tables import SNAPSHOTS


def _digest(frame: pd.DataFrame) -> str:
    return hashlib.sha1(frame.to_json(orient="split", date_format="iso").encode()).hexdigest()


@pytest.mark.parametrize("kwargs, digest", [
    (dict(n_pages=60, n_periods=5, seed=3), "9ade9da780b77fca102a2ecbd174c4f68c712754"),
    (dict(n_pages=40, n_periods=4, seed=7, co_change=0.9, content_link_coupling=0.0, rate_drift=0.3, n_topics=5,
          n_sites=4), "2884f457ee999e067c517bd56ff77c72b87fe7d3"),
])
def test_generate_snapshots_makes_the_same_frames_as_before_the_labels(kwargs, digest):
    # Digests of the frames generate_snapshots returned before the hidden labels were added; the decision
    # lineage columns came later and are empty here (no policy chose a synthetic snapshot).
    frame = generate_snapshots(**kwargs)
    assert frame[list(DECISION_COLUMN_NAMES)].isna().all().all()
    assert _digest(frame.drop(columns=list(DECISION_COLUMN_NAMES))) == digest


def test_the_labels_are_beside_the_snapshots_not_in_them():
    plain = generate_snapshots(n_pages=80, n_periods=5, seed=2)
    world = labelled_snapshots(LinkLabels(url_topic_word=0.0), n_pages=80, n_periods=5, seed=2)
    # Without topic words in the URLs the labelled world is the plain one: the labels drew nothing from its generator.
    pd.testing.assert_frame_equal(world.snapshots, plain)
    assert set(world.snapshots.columns) == set(SNAPSHOTS.column_names)
    assert set(world.snapshots.columns) >= set(SNAPSHOT_COLUMNS)
    assert not {"relevant", "topic", "label", "focus"} & set(world.snapshots.columns)
    links = {u for column in ("internal_outlinks", "external_outlinks") for row in world.snapshots[column] for u in row}
    assert links == set(world.truth.link) and world.truth.link.is_unique
    # With them, only the URLs change: every other column (texts, counts of links) is the plain world's.
    slugged = labelled_snapshots(n_pages=80, n_periods=5, seed=2).snapshots
    pd.testing.assert_frame_equal(slugged.drop(columns=["internal_outlinks", "external_outlinks"]),
                                  plain.drop(columns=["internal_outlinks", "external_outlinks"]))
    assert [len(x) for x in slugged.internal_outlinks] == [len(x) for x in plain.internal_outlinks]


def test_urls_carry_the_label_only_noisily():
    world = labelled_snapshots(n_pages=300, n_periods=4, seed=1)
    truth = world.truth
    focus_word = truth.link.str.contains(f"/t{world.focus}w\\d+/", regex=True)
    assert (truth.topic[truth.relevant] == world.focus).all() and (truth.topic[~truth.relevant] != world.focus).all()
    share = focus_word[truth.relevant].mean()
    assert 0.4 < share < 0.6  # url_topic_word = 0.5 of the relevant links say so, the rest do not
    assert not focus_word[~truth.relevant].any()
    assert 0.2 < truth.relevant.mean() < 0.8
