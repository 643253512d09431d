"""The user chooser: evidence in, unique users out, pushed scores and feedback applied."""

from __future__ import annotations

from datetime import datetime, timezone

from focuscrawl.fue import RANKING_METHODS, Post, UserChooser

T = datetime(2026, 11, 29, 6, 0, tzinfo=timezone.utc).timestamp()


def posts() -> list[Post]:
    return [
        Post("ann", T, num_comments=3, text="football", community="sports", post_id="1"),
        Post("bob", T, num_comments=10, text="guitar", community="music", post_id="2"),
        Post("ann", T, num_comments=30, text="recipe", community="food", post_id="3"),
        Post("cat", T, num_comments=1, text="depressed lonely", community="depression", post_id="4"),
    ]


def test_hac_chooser_follows_average_comments_and_never_repeats() -> None:
    chooser = UserChooser(RANKING_METHODS.create("HAC"))
    assert chooser.add_posts(posts()) == 3
    assert chooser.choose() == "ann"  # (3 + 30) / 2 = 16.5
    # ann's later posts are ignored: she is processed and never handed out again
    assert chooser.add_posts([Post("ann", T, num_comments=99, post_id="5")]) == 0
    assert [chooser.choose(), chooser.choose(), chooser.choose()] == ["bob", "cat", None]
    assert chooser.processed == {"ann", "bob", "cat"}
    assert "ann" not in chooser.evidence  # evidence is dropped once extracted


def test_pushed_scores_reorder_waiting_users_only() -> None:
    chooser = UserChooser(RANKING_METHODS.create("HAC"))
    chooser.add_posts(posts())
    assert chooser.choose() == "ann"
    assert chooser.set_scores([("cat", 100.0), ("ann", 500.0), ("nobody", 7.0)]) == 1
    assert chooser.top(2) == [("cat", 100.0), ("bob", 10.0)]
    assert chooser.choose() == "cat"


def test_hcp_chooser_scores_the_concatenated_text(toy_classifier) -> None:
    chooser = UserChooser(RANKING_METHODS.create("HCP", classifier=toy_classifier))
    chooser.add_posts(posts())
    assert chooser.choose() == "cat"
    chooser.add_posts([Post("bob", T, text="hopeless insomnia numb", post_id="9")])
    assert chooser.choose() == "bob"  # bob's new post outweighs guitar
    assert chooser.choose() == "ann"


def test_fusion_chooser_keeps_one_frontier_per_component(toy_classifier) -> None:
    chooser = UserChooser(RANKING_METHODS.create("FUSION-HCP-HAC", classifier=toy_classifier))
    chooser.add_posts(posts())
    # HCP: cat, bob, ann; HAC: ann 16.5, bob 10, cat 1. Mean positions all tie at 2, so the
    # first seen in the HCP list wins; then bob and ann tie at 1.5 and bob comes first again.
    assert [chooser.choose(), chooser.choose(), chooser.choose(), chooser.choose()] == ["cat", "bob", "ann", None]


def test_feedback_reaches_an_adaptive_method(toy_classifier) -> None:
    chooser = UserChooser(RANKING_METHODS.create("HCP-CB", classifier=toy_classifier))
    same = "football depressed"
    chooser.add_posts([
        Post("s1", T, text=same, community="sports", post_id="a"),
        Post("d1", T, text=same, community="depression", post_id="b"),
        Post("s2", T, text=same, community="sports", post_id="c"),
        Post("d2", T, text=same, community="depression", post_id="d"),
    ])
    assert chooser.choose() == "s1"  # equal scores: first seen
    chooser.feedback("s1", relevant=False)
    assert chooser.choose() == "d1"  # sports just produced a miss; the head is re-scored
    chooser.feedback("d1", relevant=True)
    assert chooser.choose() == "d2"
