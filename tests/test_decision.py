"""Decision lineage: every push ranks its items and names its model; a follower reads that back as the
``chosen_*`` columns a fetch lands (focuscrawl.lake.decision, focuscrawl.topics.priority.ranked)."""

from __future__ import annotations

from focuscrawl.lake.decision import DECISION_COLUMN_NAMES, DECISION_COLUMNS, Decision
from focuscrawl.topics.priority import Priority, ranked


def test_a_push_ranks_its_scored_items_best_first_ties_in_the_order_given():
    push = ranked([("a", 0.2, {"model": "m"}), ("gone", None, {}), ("b", 0.9, {}), ("c", 0.2, {}),
                   ("d", 0.5, {"rank": 7})])
    assert [(key, extra.get("rank")) for key, _, extra in push] == [("a", 3), ("gone", None), ("b", 1), ("c", 4),
                                                                     ("d", 7)]  # a row's own rank is kept
    assert push[0][2] == {"model": "m", "rank": 3}


def test_a_pushed_row_is_the_decision_it_lands_and_no_push_leaves_the_model_null():
    row = Priority.from_json(Priority(0.75, {"model": "NNL-ET_LBLA/int", "model_version": 3, "rank": 2,
                                             "period": 9}).to_json()).row()
    assert Decision.of_push("revisits", "NNL-ET_LBLA", row).columns() == {
        "chosen_by_loop": "revisits", "chosen_by_method": "NNL-ET_LBLA", "chosen_by_model": "NNL-ET_LBLA/int",
        "chosen_by_model_version": 3, "chosen_score": 0.75, "chosen_rank": 2}
    seed = Decision.of_push("revisits", "discovery_order", None).columns()
    assert seed == dict(zip(DECISION_COLUMN_NAMES, ("revisits", "discovery_order", None, None, None, None)))
    assert all(c.nullable for c in DECISION_COLUMNS)  # an existing table takes them on (lake.ensure_table)
