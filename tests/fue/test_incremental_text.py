"""HCP's score followed post by post equals re-vectorising the whole text (issue 18, point 3).

Real posts: the 1,895 Reddit posts of SDCNL (``../shared/data/sdcnl``), a classifier fitted on them
(TF-IDF + L1 logistic regression, seed 000 section IV-F), the posts dealt to 40 users so each
user's text grows over ~47 posts. A small text window (1,500 characters) makes parts leave the
window and long posts stand alone, cut, all the time; the default window (20,000) is tested too.
"""

from __future__ import annotations

import csv
import random

import numpy as np
import pytest

from focuscrawl.fue import EvidenceAggregator, Post, UserChooser, UserClassifier
from focuscrawl.fue.methods import RANKING_METHODS
from focuscrawl.fue.textscore import IncrementalTextScorer, UserTerms

TOL = 1e-9


@pytest.fixture(scope="module")
def sdcnl(shared_data):
    csv.field_size_limit(10**8)
    with open(shared_data / "sdcnl" / "combined-set.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    rng = random.Random(0)
    posts = [Post(author=f"u{rng.randrange(40)}", created_utc=1.6e9 + 3600.0 * i, score=float(i % 7),
                  num_comments=float(row["num_comments"] or 0), title=row["title"], text=row["selftext"],
                  community="depression" if row["is_suicide"] == "0" else "SuicideWatch", post_id=f"p{i}")
             for i, row in enumerate(rows)]
    docs = [f"{row['title']}\n{row['selftext']}" for row in rows]
    labels = [int(row["is_suicide"]) for row in rows]
    return posts, UserClassifier(min_df=5).fit(docs, labels), (docs, labels)


def revectorised(classifier, chooser: UserChooser) -> dict[str, float]:
    users = [u for u, _ in chooser.top(len(chooser))]
    texts = [chooser.evidence.get(u).text for u in users]
    return dict(zip(users, classifier.predict_proba(texts)))


@pytest.mark.parametrize("window", [1_500, 20_000])
def test_followed_scores_equal_the_classifier_on_the_whole_text_after_every_post(sdcnl, window):
    posts, clf, _ = sdcnl
    fast = UserChooser(RANKING_METHODS.create("HCP", classifier=clf), EvidenceAggregator(max_text_chars=window))
    scorer = fast.method.classifier
    assert isinstance(scorer, IncrementalTextScorer)
    worst = 0.0
    for i, post in enumerate(posts):
        fast.add_posts([post])
        ev = fast.evidence.get(post.author)
        worst = max(worst, abs(fast._frontiers[0].score_of(post.author) - clf.predict_proba([ev.text])[0]))
        if i % 400 == 399:  # every candidate, not only the one just scored
            expected = revectorised(clf, fast)
            assert max(abs(s - expected[u]) for u, s in fast.top(len(fast))) < TOL
    assert worst < TOL
    assert scorer.revectorised == 0 and scorer.followed == len(posts)
    if window == 1_500:
        assert any(len(p.body) > window for p in posts)  # cut parts really happened


@pytest.mark.parametrize("name", ["HCP", "LCP", "HCP-CB", "FUSION-HCP-HAC", "HIERARCHICAL-R2"])
def test_the_chooser_ranks_and_picks_as_the_re_vectorising_one(sdcnl, name):
    posts, clf, _ = sdcnl
    choosers = [UserChooser(RANKING_METHODS.create(name, classifier=clf, seed=1), EvidenceAggregator(max_text_chars=1_500),
                            incremental_text=fast) for fast in (True, False)]
    picks: list[list[str]] = [[], []]
    for i, post in enumerate(posts):
        for chooser, picked in zip(choosers, picks):
            chooser.add_posts([post])
            if i % 60 == 59:
                picked.append(chooser.choose())
                chooser.feedback(picked[-1], relevant=i % 120 == 59)
    assert picks[0] == picks[1]
    fast, slow = choosers
    for a, b in zip(fast._frontiers, slow._frontiers):
        got, want = dict(a.items()), dict(b.items())
        assert got.keys() == want.keys()
        assert max(abs(got[u] - want[u]) for u in got) < TOL
    assert [u for u, _ in fast.top(10)] == [u for u, _ in slow.top(10)]


def test_restore_and_a_swapped_model_keep_the_scores_exact(sdcnl):
    posts, clf, (docs, labels) = sdcnl
    live = UserChooser(RANKING_METHODS.create("HCP", classifier=clf), EvidenceAggregator(max_text_chars=1_500))
    live.add_posts(posts[:900])
    restored = UserChooser(RANKING_METHODS.create("HCP", classifier=clf), EvidenceAggregator(max_text_chars=1_500))
    restored.restore(live.changes())
    for post in posts[900:1400]:
        live.add_posts([post])
        restored.add_posts([post])
    assert dict(restored._frontiers[0].items()) == pytest.approx(dict(live._frontiers[0].items()), abs=TOL)
    assert restored.method.classifier.revectorised == 0

    # Pseudo-training swaps the model (section V): the chooser follows the texts under the new one.
    other = UserClassifier(min_df=3, C=4.0).fit(docs[::2], labels[::2])
    live.method.set_classifier(other)
    for post in posts[1400:]:
        live.add_posts([post])
    assert isinstance(live.method.classifier, IncrementalTextScorer) and live.method.classifier.classifier is other
    touched = {p.author for p in posts[1400:]} - live.processed
    expected = revectorised(other, live)
    assert max(abs(live._frontiers[0].score_of(u) - expected[u]) for u in touched) < TOL


def test_a_classifier_it_cannot_mirror_keeps_re_vectorising(sdcnl):
    posts, _, (docs, labels) = sdcnl
    sublinear = UserClassifier(min_df=5).fit(docs, labels)
    sublinear.vectorizer_.sublinear_tf = True  # log(1 + tf): not additive over parts
    assert "sublinear_tf" in IncrementalTextScorer.unsupported(sublinear)
    chooser = UserChooser(RANKING_METHODS.create("HCP", classifier=sublinear))
    assert chooser.method.classifier is sublinear
    chooser.add_posts(posts[:50])
    expected = revectorised(sublinear, chooser)
    assert all(abs(s - expected[u]) < TOL for u, s in chooser.top(len(chooser)))
    assert IncrementalTextScorer.unsupported(object()).startswith("no fitted")


def test_rounding_does_not_build_up_over_a_long_stream(sdcnl):
    """Thousands of parts in and out of one user's window: the sums stay those of its counts."""
    posts, clf, _ = sdcnl
    agg = EvidenceAggregator(max_text_chars=3_000)
    scorer = IncrementalTextScorer(clf)
    agg.watch_texts(scorer)
    for round_ in range(4):
        for i, post in enumerate(posts):
            agg.add(Post("one", post.created_utc, title=post.title, text=post.text, post_id=f"{round_}-{i}"))
    text = agg.get("one").text
    assert abs(scorer.predict_proba_evidence([agg.get("one")])[0] - clf.predict_proba([text])[0]) < TOL
    assert np.isclose(scorer.decision("one"), clf.model_.decision_function(clf.vectorizer_.transform([text]))[0],
                      rtol=0, atol=TOL)


def test_the_scorer_tokenises_real_posts_as_the_vectoriser_does(sdcnl):
    posts, clf, _ = sdcnl
    scorer = IncrementalTextScorer(clf)
    analyse = clf.vectorizer_.build_analyzer()
    vocabulary = clf.vectorizer_.vocabulary_
    assert scorer.terms.key == (True, None)  # the fast path is the one tested
    for post in posts:
        expected = [vocabulary[t] for t in analyse(post.body) if t in vocabulary]
        assert [scorer._column[t] for t in scorer.terms.tokens(post.body) if t in scorer._column] == expected


def test_the_chooser_says_how_it_scores_text(sdcnl, toy_classifier):
    _, clf, _ = sdcnl
    assert "HCP: incremental" in UserChooser(RANKING_METHODS.create("HCP", classifier=clf)).text_scoring()
    slow = UserChooser(RANKING_METHODS.create("HCP", classifier=clf), incremental_text=False)
    assert "incremental_text=False" in slow.text_scoring()
    assert UserChooser(RANKING_METHODS.create("HAC")).text_scoring() == "no classifier"


def test_a_swapped_model_takes_up_every_held_user_from_the_shared_token_counts(sdcnl):
    """Pseudo-training's swap maps the held users' token counts (no part tokenised again): every held
    user's followed score is at once the new classifier's own on the whole text."""
    posts, clf, (docs, labels) = sdcnl
    chooser = UserChooser(RANKING_METHODS.create("HCP", classifier=clf), EvidenceAggregator(max_text_chars=1_500))
    chooser.add_posts(posts[:1200])
    terms = chooser.method.classifier.terms
    other = UserClassifier(min_df=3, C=4.0).fit(docs[1::2], labels[1::2])
    chooser.method.set_classifier(other)
    chooser.add_posts(posts[1200:1201])  # the chooser follows the swap on its next posts
    scorer = chooser.method.classifier
    assert scorer.classifier is other and scorer.terms is terms  # one UserTerms, tokens counted once
    users = list(chooser.evidence.users())
    assert len(users) > 10
    want = other.predict_proba([chooser.evidence.get(u).text for u in users])
    got = scorer.predict_proba_evidence([chooser.evidence.get(u) for u in users])
    assert np.max(np.abs(got - want)) < TOL and scorer.revectorised == 0


def test_a_scorer_told_before_the_token_counts_it_reads_says_so(sdcnl):
    _, clf, _ = sdcnl
    terms = UserTerms(clf.vectorizer_)
    agg = EvidenceAggregator()
    agg.watch_texts(IncrementalTextScorer(clf, terms))
    agg.watch_texts(terms)
    with pytest.raises(RuntimeError, match="register the UserTerms with the aggregator first"):
        agg.add(Post("u", 1.6e9, text="hopeless and lonely", post_id="p"))


def test_stop_words_in_the_vocabulary_are_dropped_as_the_analyser_does(sdcnl):
    posts, _, (docs, labels) = sdcnl
    clf = UserClassifier(min_df=5, stop_words=None).fit(docs, labels)
    clf.vectorizer_.stop_words = ["the", "and", "to"]  # now in the vocabulary: the analyser drops them
    assert {"the", "and", "to"} <= clf.vectorizer_.vocabulary_.keys()
    agg = EvidenceAggregator(max_text_chars=1_500)
    scorer = IncrementalTextScorer(clf)
    agg.watch_texts(scorer)
    for post in posts[:300]:
        agg.add(post)
    users = list(agg.users())
    want = clf.predict_proba([agg.get(u).text for u in users])
    assert np.max(np.abs(scorer.predict_proba_evidence([agg.get(u) for u in users]) - want)) < TOL


def test_every_user_holds_the_one_copy_of_a_token(sdcnl):
    """Issue 33: each user's counts kept token strings of their own (a week's FUE fold grew to 5.3 GB); the
    counts of every user now key on one interned copy of each token (SDCNL dealt to 1,000 users, three times
    over: 35.9 MiB of counts before, 13.0 MiB after, by tracemalloc)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    terms = UserTerms(TfidfVectorizer())
    terms.added("a", "the crawler fetched " + "pages " * 2)
    terms.added("b", "".join(["pag", "es the"]))  # built at run time: a string of its own before interning
    (a_pages,) = [t for t in terms.counts("a") if t == "pages"]
    (b_pages,) = [t for t in terms.counts("b") if t == "pages"]
    assert a_pages is b_pages
    assert terms.counts("a")["pages"] == 2 and terms.counts("b") == {"pages": 1, "the": 1}
