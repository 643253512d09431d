"""Restore functions of the restart-safe state (issue 16, point 5): rebuilding from the changelog
records gives the same state as the live fold, for the evidence, the chooser and its stage."""

from __future__ import annotations

import dataclasses
import json
import random
from types import SimpleNamespace

import numpy as np
import pytest

from focuscrawl.topics.changelog import latest_per_key
from focuscrawl.fue import RANKING_METHODS, EvidenceAggregator, Post, UserChooser
from focuscrawl.fue.chooser import ChooserStage, UserState
from focuscrawl.fue.evidence import EvidenceState
from focuscrawl.fue.pipeline import StatsEvent, post_to_json
from focuscrawl.topics.priority import Priority
from focuscrawl.core.records import RecordError

WORDS = "hopeless numb lonely football recipe guitar weekend crying".split()


class WordClassifier:
    """A candidate classifier fake: the share of 'sad' words in the text (deterministic, no I/O)."""

    SAD = {"hopeless", "numb", "lonely", "crying"}

    def predict_proba(self, texts):
        out = []
        for t in texts:
            words = t.split()
            out.append((sum(w in self.SAD for w in words) + 0.5) / (len(words) + 1.0))
        return np.asarray(out)


def posts(n: int, users: int, seed: int) -> list[Post]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        # Overlapping listings: every fifth post is seen again under the same id.
        j = i - 1 if i % 5 == 4 else i
        r = random.Random(j * 7919 + seed)
        out.append(Post(author=f"u{r.randrange(users)}", created_utc=1.7e9 + r.uniform(0, 86400 * 3),
                        score=float(r.randrange(5)), num_comments=float(r.randrange(3)),
                        title=" ".join(r.sample(WORDS, 2)), text=" ".join(r.sample(WORDS, 3)),
                        community=f"c{r.randrange(4)}", post_id=f"t3_{j}"))
    rng.shuffle(out)
    return out


def test_kafka_python_checks_the_crcs_of_what_it_reads_in_c():
    # Every fetched batch's CRC-32C is checked; without the C crc32c (kafka-python[crc32c]) kafka-python
    # checks it in pure Python, 70 % of a chooser's restore from a 50,000-user changelog (4 of 5.8 s idle).
    from kafka.record import util

    assert util.crc32c_c is not None, "the crc32c package is missing: install requirements.lock (make venv)"


def test_evidence_restored_from_its_state_folds_on_like_the_live_aggregator():
    stream = posts(400, 30, seed=1)
    live, first = EvidenceAggregator(max_text_chars=200), EvidenceAggregator(max_text_chars=200)
    for p in stream:
        live.add(p)
    for p in stream[:170]:
        first.add(p)
    # Through JSON, as the changelog holds it.
    saved = {u: json.dumps(first.state(u).to_dict()) for u in first.users()}
    restored = EvidenceAggregator(max_text_chars=200)
    for u, d in saved.items():
        restored.restore(u, EvidenceState.from_dict(json.loads(d)))
    for p in stream[170:]:
        restored.add(p)
    assert set(restored.users()) == set(live.users())
    assert all(restored.get(u) == live.get(u) for u in live.users())
    # A post counted before the restart is still a duplicate after it.
    assert restored.add(stream[0]) is None


def test_user_state_round_trips_and_names_a_bad_status():
    ev = EvidenceAggregator()
    ev.add(Post(author="ann", created_utc=1.7e9, score=2, title="hi", community="c", post_id="a"))
    st = UserState("ann", "candidate", 3, (0.25, 0.5), evidence=ev.state("ann"))
    assert UserState.from_json(st.to_json()) == st
    judged = UserState("bob", "judged", 9, snapshot=ev.get("ann"), relevant=True)
    assert UserState.from_json(judged.to_json()) == judged
    with pytest.raises(ValueError, match="candidate, chosen, judged"):
        UserState("x", "extracted", 1)


def _chooser(method: str) -> UserChooser:
    return UserChooser(RANKING_METHODS.create(method, classifier=WordClassifier(), seed=3))


def _events(seed: int) -> list[tuple]:
    """Posts in listings, extractor requests, verdicts and pushed scores, interleaved."""
    rng = random.Random(seed)
    stream = posts(600, 80, seed)
    events, chosen_slots = [], 0
    for i in range(0, len(stream), 20):
        events.append(("posts", stream[i:i + 20]))
        if i % 60 == 0:
            events.append(("choose", 3))
            chosen_slots += 3
        if i % 100 == 0 and i:
            events.append(("verdicts", rng.random()))
        if i % 140 == 0:
            events.append(("scores", [(f"u{rng.randrange(80)}", rng.random()) for _ in range(5)]))
    return events


def _apply(chooser: UserChooser, event: tuple, log: list, pending: list) -> None:
    kind, arg = event
    if kind == "posts":
        chooser.add_posts(arg)
    elif kind == "choose":
        for _ in range(arg):
            user = chooser.choose()
            if user is not None:
                log.append(user)
                pending.append(user)
    elif kind == "verdicts":
        rng = random.Random(int(arg * 1e6))
        for user in list(pending):
            chooser.feedback(user, rng.random() < 0.4)
            pending.remove(user)
    elif kind == "scores":
        chooser.set_scores(arg)


@pytest.mark.parametrize("method", ["HAS", "RND", "N06", "HCP", "HCP-CB", "FUSION-HCP-HAC", "HIERARCHICAL"])
def test_a_chooser_restored_at_any_point_ranks_and_picks_as_its_uninterrupted_twin(method):
    events = _events(seed=7)
    for cut in (1, len(events) // 3, len(events) - 2):
        twin, first = _chooser(method), _chooser(method)
        twin_log, twin_pending, log, pending = [], [], [], []
        changelog: list[tuple[int, bytes, bytes]] = []
        for i, event in enumerate(events):
            _apply(twin, event, twin_log, twin_pending)
            if i < cut:
                _apply(first, event, log, pending)
                changelog += [(0, st.user.encode(), st.to_json()) for st in first.changes()]
        # The first chooser dies here; its successor starts from the changelog alone.
        restored = _chooser(method)
        restored.restore(UserState.from_json(v) for _, v in latest_per_key(changelog).values())
        assert restored.changes() == []  # restoring writes nothing back
        assert sorted(restored.awaiting) == sorted(pending)
        for event in events[cut:]:
            _apply(restored, event, log, pending)
        assert restored.top(100) == twin.top(100), f"{method}, restart after event {cut}"
        assert log == twin_log
        assert len(log) == len(set(log))
        assert restored.processed == twin.processed


def test_changes_report_each_changed_user_once_in_order():
    chooser = _chooser("HAS")
    chooser.add_posts([Post(author="a", created_utc=0, score=1, post_id="1"),
                       Post(author="b", created_utc=0, score=3, post_id="2")])
    assert [st.user for st in chooser.changes()] == ["a", "b"]
    assert chooser.changes() == []
    assert chooser.choose() == "b"
    chooser.feedback("b", True)
    (st,) = chooser.changes()
    assert (st.user, st.status, st.snapshot) == ("b", "judged", None)  # HAS does not learn: no snapshot kept


def _rec(topic, partition, key, value, offset=0, timestamp=1_700_000_000_000):
    return SimpleNamespace(topic=topic, partition=partition, key=key.encode(), value=value, offset=offset,
                           timestamp=timestamp)


def test_two_stages_reading_the_partitions_in_different_interleavings_rank_ties_alike():
    # Every user's posts in one partition (keyed by author); many equal HAS scores.
    parts: dict[int, list] = {0: [], 1: [], 2: []}
    for i, p in enumerate(posts(300, 60, seed=5)):
        part = int(p.author[1:]) % 3
        parts[part].append(_rec("p", part, p.author, post_to_json(p), offset=len(parts[part]),
                                timestamp=1_700_000_000_000 + i // 50))

    def stage_fed(order):
        stage = ChooserStage(_chooser("HAS"), method="HAS", posts_topic="p", stats_topic="s", scores_topic="sc",
                             extract_topic="x", lead=4)
        for rec in order:
            stage.handle(rec)
        return stage

    by_partition = [r for q in (0, 1, 2) for r in parts[q]]
    interleaved = sorted(by_partition, key=lambda r: (r.offset, -r.partition))
    a, b = stage_fed(by_partition), stage_fed(interleaved)
    assert len({score for _, score in a.chooser.top(60)}) < 40  # plenty of ties to break
    assert a.chooser.top(60) == b.chooser.top(60)
    assert [k for _, k, _ in a.idle(True)] == [k for _, k, _ in b.idle(True)]


def _verdict(method: str, user: str, relevant: bool) -> bytes:
    """A whole verdict, as the classifier writes it to the stats topic."""
    return StatsEvent(run_id="run", method=method, user=user, sim_time=60.0, sim_epoch=1.7e9, extraction_seconds=1.0,
                      items=3, pages=1, probability=0.95 if relevant else 0.1, relevant=relevant).to_json()


def test_stage_chooses_only_when_caught_up_or_after_the_wait_and_drops_revoked_partitions():
    now = [0.0]
    stage = ChooserStage(_chooser("HAS"), method="HAS", posts_topic="p", stats_topic="s", scores_topic="sc",
                         extract_topic="x", lead=2, catch_up_wait=5.0, clock=lambda: now[0])
    for i, (user, score) in enumerate([("a", 1), ("b", 5), ("c", 3)]):
        stage.handle(_rec("p", i % 2, user, post_to_json(Post(author=user, created_utc=0, score=score, post_id=str(i)))))
    assert stage.idle(caught_up=False) == []          # behind its input, within the wait
    now[0] = 6.0
    out = stage.idle(caught_up=False)                  # waited long enough: choose anyway
    assert [key for _, key, _ in out] == ["b", "c"] and stage.idle(True) == []  # lead reached
    stage.handle(_rec("s", 1, "b", _verdict("HAS", "b", True)))
    stage.handle(_rec("s", 1, "c", _verdict("OTHER", "c", True)))  # another method's verdict: not ours
    assert [key for _, key, _ in stage.idle(True)] == ["a"]
    changes = dict(stage.changes())
    assert {UserState.from_json(v).status for v in changes.values()} == {"judged", "chosen"}
    stage.revoked([0])                                 # a and c were seen on partition 0
    assert stage.chooser.processed == {"b"}
    stage.handle(_rec("sc", 1, "zz", Priority(0.5).to_json()))  # unknown user: ignored
    assert stage.counts["scores_applied"] == 0


def test_an_extract_request_names_the_push_that_chose_the_user_and_the_verdict_row_lands_it():
    from focuscrawl.fue.pipeline import ExtractRequest, History, ReferenceJudge, stats_row
    from focuscrawl.lake.decision import DECISION_COLUMN_NAMES

    stage = ChooserStage(_chooser("HAS"), method="HAS", posts_topic="p", stats_topic="s", scores_topic="sc",
                         extract_topic="x", lead=3)
    for i, (user, score) in enumerate([("a", 1), ("b", 5), ("c", 3)]):
        stage.handle(_rec("p", 0, user, post_to_json(Post(author=user, created_utc=0, score=score, post_id=str(i)))))
    pushed = {"method": "HAS", "model": "candidate-classifier/HAS", "model_version": 12}
    stage.handle(_rec("sc", 0, "a", Priority(99.0, {**pushed, "rank": 1}).to_json()))
    stage.handle(_rec("sc", 0, "c", Priority(0.5, {**pushed, "rank": 2}).to_json()))
    stage.handle(_rec("p", 0, "c", post_to_json(Post(author="c", created_utc=0, score=4, post_id="9"))))  # rescored
    requests = {key: ExtractRequest.from_json(value) for _, key, value in stage.idle(True)}
    assert requests["a"].chosen.columns() == dict(zip(DECISION_COLUMN_NAMES, (
        "fue", "HAS", "candidate-classifier/HAS", 12, 99.0, 1)))
    # c's pushed score was replaced by its own when a new post came: the method chose it, no model
    assert (requests["c"].chosen.model, requests["c"].chosen.method, requests["b"].chosen.model) == (None, "HAS", None)
    history = History("a", ("text",), 1, 0.1, method="HAS", chosen=requests["a"].chosen)
    verdict = ReferenceJudge(_FixedProba(0.95)).judge(History.from_json(history.to_json()), run_id="r", method="HAS",
                                                      sim_time=1.0, sim_epoch=2.0)
    row = stats_row(SimpleNamespace(value=verdict.to_json()))
    assert (row["chosen_by_model"], row["chosen_by_model_version"], row["chosen_score"], row["chosen_rank"]) == (
        "candidate-classifier/HAS", 12, 99.0, 1) and "chosen" not in row


def test_a_candidates_push_round_trips_in_its_state_and_an_older_record_restores_without_one():
    from focuscrawl.lake.decision import Decision

    ev = EvidenceAggregator()
    ev.add(Post(author="ann", created_utc=1.7e9, score=2, title="hi", community="c", post_id="a"))
    pushed = Decision("fue", "HAS", "candidate-classifier/HAS", 12, 0.75, 3)
    st = UserState("ann", "candidate", 3, (0.75,), evidence=ev.state("ann"), pushed=pushed)
    assert UserState.from_json(st.to_json()) == st
    older = {k: v for k, v in json.loads(st.to_json()).items() if k != "pushed"}  # written before the field
    assert UserState.from_json(json.dumps(older)) == dataclasses.replace(st, pushed=None)


def _stage(lead: int = 3) -> ChooserStage:
    return ChooserStage(_chooser("HAS"), method="HAS", posts_topic="p", stats_topic="s", scores_topic="sc",
                        extract_topic="x", lead=lead)


@pytest.mark.parametrize("older", [False, True])
def test_a_stage_restored_from_its_changelog_names_the_push_its_uninterrupted_twin_names(older):
    from focuscrawl.fue.pipeline import ExtractRequest

    pushed = {"method": "HAS", "model": "candidate-classifier/HAS", "model_version": 12}
    before = [_rec("p", i % 2, user, post_to_json(Post(author=user, created_utc=0, score=score, post_id=str(i))))
              for i, (user, score) in enumerate([("a", 1), ("b", 5), ("c", 3), ("d", 2)])]
    before += [_rec("sc", 0, "a", Priority(99.0, {**pushed, "rank": 1}).to_json()),
               _rec("sc", 0, "c", Priority(0.5, {**pushed, "rank": 2}).to_json())]
    # after the restart: c's push is replaced by its own score (a new post); d gets a push only now
    after = [_rec("p", 0, "c", post_to_json(Post(author="c", created_utc=0, score=4, post_id="9"))),
             _rec("sc", 1, "d", Priority(7.0, {**pushed, "model_version": 13, "rank": 1}).to_json())]

    def chosen(stage: ChooserStage) -> dict:
        return {key: ExtractRequest.from_json(value).chosen for _, key, value in stage.idle(True)}

    twin, first = _stage(), _stage()
    for rec in before:
        twin.handle(rec)
        first.handle(rec)
    changelog = [(p, k.encode(), v) for (k, v) in first.changes() for p in (int(k in ("b", "d")),)]
    if older:  # records an older chooser wrote: no push in them
        changelog = [(p, k, json.dumps({f: x for f, x in json.loads(v).items() if f != "pushed"}).encode())
                     for p, k, v in changelog]
    restored = _stage()  # the first stage dies; its successor reads on from the committed offsets
    restored.assigned([0, 1], latest_per_key(changelog))
    assert restored.changes() == []
    for rec in after:
        twin.handle(rec)
        restored.handle(rec)
    expected, got = chosen(twin), chosen(restored)
    assert list(got) == list(expected) == ["a", "d", "b"]
    assert expected["a"].columns()["chosen_by_model_version"] == 12 and expected["d"].model_version == 13
    if older:  # the push of a is lost with the older records: its score is still the push's, but no model is named
        assert got["a"] == dataclasses.replace(expected["a"], model=None, model_version=None, rank=None)
        assert {k: got[k] for k in "db"} == {k: expected[k] for k in "db"}
    else:
        assert got == expected


class _FixedProba:
    def __init__(self, p: float) -> None:
        self.p = p

    def proba(self, text: str) -> float:
        return self.p


def test_stage_refuses_a_verdict_that_is_not_a_whole_stats_event():
    stage = ChooserStage(_chooser("HAS"), method="HAS", posts_topic="p", stats_topic="s", scores_topic="sc",
                         extract_topic="x")
    partial = json.dumps({"method": "HAS", "user": "a", "relevant": True}).encode()
    with pytest.raises(RecordError, match="StatsEvent.run_id: missing"):
        stage.handle(_rec("s", 0, "a", partial))
    mistyped = json.dumps({**json.loads(_verdict("HAS", "a", True)), "relevant": "yes"}).encode()
    with pytest.raises(RecordError, match="StatsEvent.relevant: expected true or false"):
        stage.handle(_rec("s", 0, "a", mistyped))
    assert stage.counts["verdicts"] == 0


# -- the revisitor's frontier, rebuilt from the snapshot table -----------------------------------


def _html(links: list[str]) -> bytes:
    return ("<html><body><p>page</p>" + "".join(f'<a href="{u}">x</a>' for u in links) + "</body></html>").encode()


class _Site:
    """A web of 40 pages, each linking to three others (deterministic), served from memory."""

    BASE = "http://127.0.0.1:9/site/s.wiki.test/wiki/P"

    def __init__(self) -> None:
        self.log: list[str] = []

    def get(self, url: str) -> bytes:
        self.log.append(url)
        i = int(url.rsplit("P", 1)[1])
        return _html([f"{self.BASE}{(i * 7 + k) % 40}" for k in (1, 2, 3)])


@pytest.mark.parametrize("cut", [1, 9, 25])
def test_revisitor_rebuilt_from_its_table_revisits_as_its_twin_without_a_duplicate_row(tmp_path, cut):
    from focuscrawl.outlinks.revisit import WEEK, PageRevisitor, SnapshotWriter

    now = [0.0]
    seeds = [_Site.BASE + "0", _Site.BASE + "5"]

    def revisitor(site, emit):
        rev = PageRevisitor(site, emit, lambda: now[0], discover="/wiki/", max_pages=30)
        return rev

    twin_site, twin_rows = _Site(), []
    twin = revisitor(twin_site, twin_rows.append)
    twin.restore([], seeds=seeds)
    while twin.revisit_next() is not None:
        pass
    now[0] = WEEK
    while twin.revisit_next() is not None:
        pass

    now[0] = 0.0
    writer = SnapshotWriter(str(tmp_path / "snapshots"))
    site = _Site()
    first = revisitor(site, writer)
    first.restore(writer.history(), seeds=seeds)
    for _ in range(cut):
        first.revisit_next()
        writer.flush()
    first.revisit_next()  # fetched, then SIGKILLed before its row was flushed: that row is lost with it
    writer.rows.clear()
    second = revisitor(site, writer)
    second.restore(writer.history(), seeds=seeds)
    # after the restore, a flush per period: nothing read from the table depends on finer ones, and each flush is a
    # Delta merge (a flush per revisit made the three cuts 2-4 minutes each of a starved CI's unit phase)
    while second.revisit_next() is not None:
        pass
    writer.flush()
    now[0] = WEEK
    while second.revisit_next() is not None:
        pass
    writer.flush()
    got = writer.seen()
    assert len(got) == len(set(got)) == 60  # every known page once per period: none lost, none doubled
    assert sorted(got) == sorted((r["url"], r["period"]) for r in twin_rows)
    # The order the pages were revisited in is the twin's, apart from the one refetched after the kill.
    refetched = site.log[:cut + 1] + site.log[cut + 2:]
    assert refetched == twin_site.log


# -- the source crawler's frontier, rebuilt from its changelog -----------------------------------


class _Feeds:
    """Three RSS feeds on a clock; feed j publishes a page every 400·(j+1) s and lists its newest 15."""

    def __init__(self, now: list[float]) -> None:
        self.now, self.log = now, []

    def fetch(self, url: str):
        import email.utils

        self.log.append(url)
        if "/feed" not in url:
            return b"<html><body>page</body></html>", "text/html", url
        j = int(url.rsplit("/feed", 1)[1])
        every = 400.0 * (j + 1)
        last = int(self.now[0] // every)
        items = "".join(f"<item><link>http://s{j}.example/p{k}</link>"
                        f"<pubDate>{email.utils.formatdate(k * every, usegmt=True)}</pubDate></item>"
                        for k in range(max(0, last - 14), last + 1))
        body = f'<?xml version="1.0"?><rss version="2.0"><channel><title>x</title>{items}</channel></rss>'
        return body.encode(), "application/rss+xml", url


@pytest.mark.parametrize("cut", [2, 17, 40])
def test_source_crawler_restored_from_its_changelog_continues_as_its_twin(cut):
    from focuscrawl.ephemeral.crawler import SourceCrawler
    from focuscrawl.ephemeral.sources import ContentSource

    sources = [ContentSource(f"http://s{j}.example/feed{j}", "feed") for j in range(3)]
    budget, steps, start = 0.01, 80, 100_000.0

    def crawler(site, rows, now):
        return SourceCrawler(sources, site.fetch, lambda table, key, row: rows.append(row), lambda: now[0],
                             budget, default_interval_s=1200.0, min_interval_s=300.0)

    now = [start]
    twin_site, twin_rows = _Feeds(now), []
    twin = crawler(twin_site, twin_rows, now)
    for _ in range(steps):
        twin.step()
        now[0] += 1 / budget

    now[0] = start
    site, rows, changelog = _Feeds(now), [], []
    first = crawler(site, rows, now)
    for _ in range(cut):
        first.step()
        changelog += [(0, k.encode(), v) for k, v in first.changes()]
        now[0] += 1 / budget
    restored = crawler(site, rows, now)  # a new process, later: it knows only the changelog
    restored.restore((k.decode(), v) for k, (_, v) in latest_per_key(changelog).items())
    for _ in range(steps - cut):
        restored.step()
        now[0] += 1 / budget
    assert rows == twin_rows  # every recrawl row once, with the gap and new links the twin saw
    assert site.log == twin_site.log  # the same recrawls and page fetches, in the same order
    assert sum(r.get("new_links", 0) for r in rows) > 0 and restored.counts["pages"] > 0  # source_pages rows have none


class _Member:
    """A stage's consumer as ``TransactionalStage._positions`` sees it: positions, None while unknown."""

    def __init__(self, positions: dict):
        self.positions = positions

    def assignment(self):
        return set(self.positions)

    def position(self, tp, timeout_ms):
        assert timeout_ms is not None, "an unbounded position() waits for ever on an unstable offset"
        return self.positions[tp]

    def highwater(self, tp):
        return 10


def test_a_stage_whose_committed_offset_stays_unknown_commits_the_others_then_exits_naming_the_fix(monkeypatch):
    """The CI run of f9dea0c: the restarted chooser's offset fetch for fue.posts partition 0 answered
    UnstableOffsetCommit for 19 minutes (a hanging transaction) and the chooser idled for good."""
    from kafka import TopicPartition

    from focuscrawl.topics import changelog
    from focuscrawl.topics.changelog import TransactionalStage

    clock = [0.0]
    monkeypatch.setattr(changelog.time, "monotonic", lambda: clock[0])
    stage = TransactionalStage("localhost:1", ["p"], "g", handler=None)
    p0, p1 = TopicPartition("p", 0), TopicPartition("p", 1)
    member = _Member({p0: None, p1: 10})
    assert stage._positions(member) == {p1: 10} and not stage._caught_up(member)
    clock[0] = stage.UNSTABLE_LIMIT_S - 1
    assert stage._positions(member) == {p1: 10}
    member.positions[p0] = 4                     # the broker aborted it in time: known again, the clock resets
    assert stage._positions(member) == {p0: 4, p1: 10} and stage.unknown_since == {}
    member.positions[p0] = None
    stage._positions(member)
    clock[0] += stage.UNSTABLE_LIMIT_S
    with pytest.raises(RuntimeError, match=r"\[\('p', 0\)\] stayed unknown for 300 s.*find-hanging"):
        stage._positions(member)


def test_a_partition_revoked_while_unknown_and_assigned_again_starts_its_wait_afresh(monkeypatch):
    from kafka import TopicPartition

    from focuscrawl.topics import changelog
    from focuscrawl.topics.changelog import TransactionalStage

    clock = [0.0]
    monkeypatch.setattr(changelog.time, "monotonic", lambda: clock[0])
    stage = TransactionalStage("localhost:1", ["p"], "g", handler=None)
    p0 = TopicPartition("p", 0)
    assert stage._positions(_Member({p0: None})) == {}
    clock[0] = 10.0
    stage._positions(_Member({}))                 # revoked before it was known
    clock[0] = stage.UNSTABLE_LIMIT_S + 20
    assert stage._positions(_Member({p0: None})) == {} and stage.unknown_since == {p0: clock[0]}
