"""The simulated clock, and the population's signals: text from data, score / comments / hour class-independent
unless a sensitivity parameter says otherwise (seed 000, issue 17: no paper verdict built into the world)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from focuscrawl.world.clock import SimClock
from focuscrawl.core.corpora import _TARGET as TARGET
from focuscrawl.core.corpora import GeneratedCorpus
from focuscrawl.world.population import TARGET_RICH, Population, PopulationConfig, base36


class FakeWall:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_clock_speedup_pause_set_and_no_going_back():
    wall = FakeWall()
    clock = SimClock(1000.0, speedup=60.0, wall=wall)
    wall.t += 2
    assert clock.now() == 1120.0
    clock.pause()
    wall.t += 50
    assert clock.now() == 1120.0
    clock.set(5000.0)
    clock.resume()
    wall.t += 1
    assert clock.now() == 5060.0
    clock.set_speedup(1.0)
    wall.t += 1
    assert clock.now() == 5061.0
    with pytest.raises(ValueError):
        clock.set(10.0)
    assert clock.state() == {"sim_now": 5061.0, "speedup": 1.0, "paused": False, "start_epoch": 1000.0}



def test_clock_wall_at_is_when_now_reaches_a_simulated_time():
    wall = FakeWall()
    clock = SimClock(1000.0, speedup=60.0, wall=wall)
    assert clock.wall_at(1120.0) == 102.0
    wall.t = clock.wall_at(1300.0)
    assert clock.now() == 1300.0
    clock.pause()
    assert clock.wall_at(2000.0) is None


def test_a_stream_item_shows_in_listings_from_the_end_of_its_bucket_not_its_creation():
    """The world builds its stream a bucket at a time, so a post created mid-bucket is not listed until the
    bucket ends: what the latency benchmark counts from (bench/latency_bench.py)."""
    import json

    from focuscrawl.world import build_world

    world = build_world(7, users=2000, base_rate=0.05, paused=True, rate_limit=0, events_per_minute=30.0,
                        warmup_seconds=0.0, data_dir=None, web=False, bucket_seconds=60)
    start = world.clock.now()
    world.clock.set(start + 600)
    world.now()
    pop = world.population
    item = next(pop.item(n) for n in pop.posts_all if pop.item(n).created % 60 > 0)
    shown = pop.visible_at(item)
    assert item.created < shown == (item.created // 60 + 1) * 60

    def listed(at: float) -> bool:
        fresh = build_world(7, users=2000, base_rate=0.05, paused=True, rate_limit=0, events_per_minute=30.0,
                            warmup_seconds=0.0, data_dir=None, web=False, bucket_seconds=60)
        fresh.clock.set(at)
        _, _, body = fresh.crawl("/r/all/new.json", {"limit": "100"})
        return "t3_" + base36(item.num) in {c["data"]["name"] for c in json.loads(body)["data"]["children"]}

    assert not listed(item.created) and not listed(shown - 1) and listed(shown)


@pytest.fixture(scope="module")
def population():
    config = PopulationConfig(seed=3, users=20_000, base_rate=0.1, events_per_minute=50.0, warmup_seconds=0.0)
    pop = Population(config, GeneratedCorpus(3))
    pop.advance(config.start_epoch + 86400)  # one simulated day of stream (~72k items), every hour covered
    return pop


def test_user_is_a_pure_function_of_seed_and_index(population):
    twin = Population(population.config, GeneratedCorpus(3))
    assert twin.history(123) == population.history(123)
    assert twin.name(123) == population.name(123) and twin.user_index(twin.name(123)) == 123
    assert twin.user_index("quiet_river_999999999") is None
    assert int(population.labels.sum()) == 2000


def _signal_auc(population) -> dict[str, float]:
    posts = [it for it in population._stream if it.kind == "t3"]
    y = np.array([population.labels[it.user] for it in posts])
    near6 = [-min(abs((it.created % 86400) / 3600 - 6), 24 - abs((it.created % 86400) / 3600 - 6)) for it in posts]
    return {
        "comments": roc_auc_score(y, [it.final_comments for it in posts]),
        "score": roc_auc_score(y, [it.final_score for it in posts]),
        "near 06:00": roc_auc_score(y, near6),
        "target words": roc_auc_score(y, [sum(w in TARGET for w in (it.title + " " + it.text).split()) for it in posts]),
        "target-rich community": roc_auc_score(y, [it.community < len(TARGET_RICH) for it in posts]),
    }


def test_by_default_only_the_text_tells_the_classes_apart(population):
    """Score, comments and hour are class-independent by default (no per-class data exists for them):
    their single-post AUC is 0.5 within sampling error (~0.005 here), while the text separates."""
    auc = _signal_auc(population)
    print("\nsingle-post AUC of each signal:", {k: round(v, 3) for k, v in auc.items()})
    for signal in ("comments", "score", "near 06:00", "target-rich community"):
        assert abs(auc[signal] - 0.5) < 0.03, (signal, auc[signal])
    assert auc["target words"] > 0.6


def test_sensitivity_parameters_move_the_signals_their_way():
    config = PopulationConfig(seed=3, users=20_000, base_rate=0.1, events_per_minute=20.0, warmup_seconds=0.0,
                              score_effect=-0.5, comments_effect=0.5, hour_effect=2.0, community_signal=0.25)
    pop = Population(config, GeneratedCorpus(3))
    pop.advance(config.start_epoch + 86400)
    auc = _signal_auc(pop)
    print("\nsingle-post AUC with effects:", {k: round(v, 3) for k, v in auc.items()})
    assert auc["comments"] > 0.55 and auc["near 06:00"] > 0.55 and auc["score"] < 0.45
    assert auc["target-rich community"] > 0.55
    # community_signal 0.25 at a 10% base rate: positives' items land there with 0.254, negatives' with
    # 0.004, so 0.1 x 0.254 / (0.1 x 0.254 + 0.9 x 0.004) = 88% of those communities' items are positives'
    rich = [pop.labels[it.user] for it in pop._stream if it.community < len(TARGET_RICH)]
    assert np.mean(rich) > 0.8, np.mean(rich)


def test_by_default_target_rich_communities_hold_the_base_rate(population):
    """No per-class community data exists, so by default a target-rich community's share of positives is
    the world's base rate (10% here), within sampling error (~1,000 items there: standard error ~0.01)."""
    items = population._stream
    share = np.mean([population.labels[it.user] for it in items])
    rich = [population.labels[it.user] for it in items if it.community < len(TARGET_RICH)]
    assert math.isclose(share, 0.1, abs_tol=0.03)
    assert math.isclose(np.mean(rich), share, abs_tol=0.05), (np.mean(rich), share, len(rich))


def test_community_knobs_are_checked():
    with pytest.raises(ValueError, match="at most 1"):
        PopulationConfig(community_noise=0.5, community_signal=0.6)



def test_ids_grow_with_creation_time_and_every_comment_answers_a_post_of_its_community(population):
    pop = population
    live = pop._stream
    assert [it.num for it in live] == sorted(it.num for it in live)
    assert all(pop.created_of(it.num) == it.created for it in live[:5000])
    history = [it for i in range(0, 2000, 7) for it in pop.history(i)]
    assert max(it.num for it in history) < live[0].num  # made before the stream: smaller ids
    assert all(pop.created_of(it.num) == it.created and pop.item(it.num) == it for it in history[:3000])
    for it in [*live[:20_000], *history[:3000]]:
        if it.kind == "t1":
            post = pop.item(it.link_num)
            assert post.kind == "t3" and post.community == it.community and post.num < it.num
            parent = pop.item(it.parent_num)
            assert parent.link_num == post.num and parent.created <= it.created
    answering_comments = sum(pop.item(it.parent_num).kind == "t1" for it in live if it.kind == "t1")
    answering_posts = sum(pop.item(it.link_num).user >= 0 for it in live if it.kind == "t1")
    assert 0 < answering_comments < answering_posts  # reply chains, most comments answering a live post
