"""[loops.revisits] target = "new_relevant_outlinks": a new outlink counts when its page (once fetched), or
else its URL, scores at or above the page focus's threshold; the targets, features and models are the same."""

from __future__ import annotations

import pandas as pd
import pytest

from focuscrawl.outlinks.params import DEFAULT, FEATURE_KNOBS
from focuscrawl.outlinks.targets import keep_links, link_relevance, page_targets, url_words


def _pages() -> pd.DataFrame:
    return pd.DataFrame({
        "url": ["p", "p", "p"], "period": [0, 1, 2], "content_digest": ["a", "a", "b"],
        "internal_outlinks": [["/wiki/Battle_of_Hastings"], ["/wiki/Battle_of_Hastings", "/wiki/Cake", "/wiki/Siege"],
                              ["/wiki/Cake", "/wiki/Football", "/wiki/Crusade"]],
        "external_outlinks": [None, ["https://x.org/king"], ["https://x.org/king", "https://x.org/recipe"]],
    })


def test_url_words_are_what_an_unfetched_link_is_judged_by():
    assert url_words("https://en.example.org/wiki/Battle_of_Hastings%2C_1066?lang=en") == \
        "en example org wiki Battle of Hastings 1066 lang en"


def test_a_fetched_pages_score_wins_over_its_url_and_unfetched_links_are_scored_by_their_words():
    asked = []

    def score_texts(texts):
        asked.extend(texts)
        return [0.9 if "Siege" in t or "king" in t else 0.1 for t in texts]

    found = link_relevance(["/wiki/Cake", "/wiki/Siege", "/wiki/Cake", "https://x.org/king"],
                           {"/wiki/Cake": 0.8, "/wiki/Siege": None}, score_texts)
    assert found == {"/wiki/Cake": 0.8, "/wiki/Siege": 0.9, "https://x.org/king": 0.9}
    assert asked == ["wiki Siege", "x org king"]  # each unfetched link once, the fetched one never
    # before any page model was trained nothing is made up
    assert link_relevance(["/wiki/Cake"], {}, lambda texts: [None] * len(texts)) == {"/wiki/Cake": None}


def test_only_relevant_new_outlinks_are_counted():
    pages = _pages()
    every = page_targets(pages).set_index("period")
    assert every.loc[1, "nnl_int"] == 2 and every.loc[2, "nnl_int"] == 2 and every.loc[2, "nnl_ext"] == 1
    relevant = {"/wiki/Battle_of_Hastings", "/wiki/Siege", "/wiki/Crusade", "https://x.org/king"}
    cut = keep_links(pages, relevant)
    assert cut.internal_outlinks.tolist()[1] == ["/wiki/Battle_of_Hastings", "/wiki/Siege"]
    assert cut.external_outlinks.tolist()[0] is None and pages.internal_outlinks.tolist()[1][1] == "/wiki/Cake"
    focused = page_targets(cut).set_index("period")
    assert focused.loc[1, "nnl_int"] == 1 and focused.loc[1, "nnl_ext"] == 1  # Siege, king
    assert focused.loc[2, "nnl_int"] == 1 and focused.loc[2, "nnl_ext"] == 0  # Crusade; the recipe is not
    assert focused.content_changed.tolist() == every.content_changed.tolist()  # content change is not about links


def test_the_target_is_a_knob_of_the_features_job_and_the_project():
    from focuscrawl.project.model import RevisitsLoop

    assert DEFAULT.target == "new_outlinks" and "target" in FEATURE_KNOBS
    assert RevisitsLoop().target == "new_outlinks"
    assert RevisitsLoop(target="new_relevant_outlinks").target == "new_relevant_outlinks"
    with pytest.raises(ValueError, match="new_relevant_outlinks"):
        RevisitsLoop(target="relevant")


def test_new_relevant_outlinks_without_a_page_focus_is_refused_naming_the_fix(tmp_path):
    from focuscrawl.project.loading import load_project

    text = """name = "t"
target = "sites"
[profile]
query = "battles and sieges"
[[sites]]
name = "s"
base_url = "https://example.org"
user_agent = "focuscrawl-test/1 (+mailto:ops@example.org)"
[loops.revisits]
seeds = ["https://example.org/"]
"""
    (tmp_path / "focuscrawl.toml").write_text(text)
    assert load_project(tmp_path / "focuscrawl.toml").loops.revisits.target == "new_outlinks"
    (tmp_path / "focuscrawl.toml").write_text(text + 'target = "new_relevant_outlinks"\n')
    with pytest.raises(Exception, match=r"loops.revisits.target.*declare \[profile.pages\] or set target = \"new_outlinks\""):
        load_project(tmp_path / "focuscrawl.toml")
