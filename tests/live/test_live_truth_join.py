"""The evaluation side joins ground truth to a live run only when the project's target is the world."""

from __future__ import annotations

from types import SimpleNamespace

from focuscrawl.reports.live_truth import WorldTruth, for_project, fue_verdicts_against_truth


def test_ground_truth_only_for_a_world_project(cfg):
    assert for_project(SimpleNamespace(target="sites"), cfg) is None
    truth = for_project(SimpleNamespace(target="world"), cfg)
    assert truth is not None and truth.eval_url == cfg.world_eval_url


def test_verdicts_are_joined_to_the_hidden_labels():
    from focuscrawl.world import build_world
    from focuscrawl.world.server import WorldServer

    world = build_world(4, data_dir=None, users=300, paused=True, rate_limit=0, events_per_minute=1.0)
    pop = world.population
    pos = [pop.name(i) for i in range(300) if pop.labels[i] == 1][:2]
    neg = [pop.name(i) for i in range(300) if pop.labels[i] == 0][:3]
    rows = ([{"method": "HCP", "user": u, "relevant": True} for u in pos + neg[:1]]
            + [{"method": "HCP", "user": neg[1], "relevant": False}]
            + [{"method": "RND", "user": u, "relevant": False} for u in (neg[2], "nobody-here")])
    with WorldServer(world) as server:
        got = fue_verdicts_against_truth(rows, WorldTruth(server.eval_url, batch=2))
    assert got["HCP"] == {"extracted": 4, "judged_relevant": 3, "truly_relevant": 2, "judged_and_true": 2,
                          "unknown": 0, "verdict_precision": 2 / 3, "true_harvest": 0.5}
    assert got["RND"]["unknown"] == 1 and got["RND"]["verdict_precision"] is None
