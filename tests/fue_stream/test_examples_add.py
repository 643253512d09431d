"""`focuscrawl examples add users FILE`: what it refuses and says, where the added users are kept, the refit through
`focuscrawl train`'s fit path as new versions with their lineage, and how a running process's classifier follows the
store's champion (``focuscrawl.fue.champion``) and a chooser rescores what it holds. Kafka is replaced by a list of
the commands sent; tests/fue_stream/test_examples_live_integration.py does it over the real engines."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from focuscrawl.config import settings
from focuscrawl.control import Command, ControlError, classifier_key
from focuscrawl.fue.batch import model_store
from focuscrawl.fue.examples import EXAMPLE_USERS, added_users
from focuscrawl.platform.examples import ExamplesError, add_examples
from focuscrawl.project.loading import load_project
from focuscrawl.testing import OTHER_WORDS as OTHER, TARGET_WORDS as TARGET


def users_file(path: Path, prefix: str, words, users: int = 12, seed: int = 0) -> Path:
    """A JSONL file of ``users`` example users, three writings each, drawn from ``words``."""
    rng = random.Random(seed)
    path.write_text("".join(f'{{"user": "{prefix}{u}", "text": "{" ".join(rng.choices(words, k=12))}"}}\n'
                            for u in range(users) for _ in range(3)))
    return path


def example_project(folder: Path, name: str = "t"):
    """A project whose example users are 12 positive and 12 negative users of JSONL files."""
    users_file(folder / "pos.jsonl", "pos", TARGET)
    users_file(folder / "neg.jsonl", "neg", OTHER, seed=1)
    (folder / "focuscrawl.toml").write_text(
        f'name = "{name}"\ntarget = "sites"\n\n[profile]\npositives = "pos.jsonl"\nnegatives = "neg.jsonl"\n\n'
        '[[sites]]\nname = "s"\nbase_url = "https://s.example.org"\n'
        'user_agent = "focuscrawl-test/1 (+mailto:ops@example.org)"\n')
    return load_project(folder / "focuscrawl.toml")


@pytest.fixture
def sent(monkeypatch):
    """The commands sent to the control topic (no broker here)."""
    commands: list[tuple[Command, str | None]] = []
    monkeypatch.setattr("focuscrawl.control.send",
                        lambda bootstrap, given, by=None, **kw: commands.extend((c, by) for c in given) or len(given))
    return commands


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    return example_project(tmp_path)


def test_added_users_are_kept_refitted_as_new_versions_with_their_lineage_and_named_to_the_processes(
        project, tmp_path, sent):
    from focuscrawl.platform.train import train_models

    cfg, said = settings(), []
    train_models(project, cfg, log=said.append)  # what `up` fits first
    store = model_store(cfg)
    first = store.champion("t/reference")
    assert (first.version, first.delta_versions, first.params["examples.added"]) == (1, {}, 0)

    more = users_file(tmp_path / "more.jsonl", "new", TARGET, users=3, seed=2)
    done = add_examples(project, cfg, more, "positive", by="ops", log=said.append)
    assert done["added"] == ["new0", "new1", "new2"] and done["versions"] == {"reference": 2, "candidate": 2}
    table = added_users(cfg, "t")
    assert [(r["user"], r["label"], len(r["writings"])) for r in table.rows] == [(f"new{u}", 1, 3) for u in range(3)]
    for role in ("reference", "candidate"):
        v2 = store.champion(f"t/{role}")
        assert v2.version == 2 and v2.promoted
        assert {"users": 27, "positives": 15, "negatives": 12, "examples.added": 3}.items() <= v2.params.items()
        assert v2.params["examples.digest"] != first.params["examples.digest"]
        assert v2.delta_versions == {EXAMPLE_USERS.name: table.delta_version}
        assert {"cv_auc", "cv_auc_low", "cv_auc_high", "cv_folds"} == set(v2.metrics)
    # the live copies the processes load at start are the new champions
    live = Path(cfg.var_dir) / "models" / "t" / "reference.joblib"
    assert live.read_bytes() == (store.folder(store.champion("t/reference")) / "model.joblib").read_bytes()
    assert [(c.action, c.key, c.state(), by) for c, by in sent] == [
        ("examples", classifier_key("fue", "t/reference"), {"value": 2}, "ops"),
        ("examples", classifier_key("fue", "t/candidate"), {"value": 2}, "ops")]
    assert any("27 example users (15 positive; with 3 example users added by `focuscrawl examples add` "
               "(3 positive, 0 negative" in line for line in said)

    # a later `up` (or `train`) fits on the changed set, says so, and stores no copy
    said.clear()
    train_models(project, cfg, log=said.append)
    assert "up to date" in said[0] and "with 3 example users added by `focuscrawl examples add`" in said[0]
    assert len(store.versions("t/reference")) == 2

    (tmp_path / "others.csv").write_text("author,title\nx0,football guitar weekend\nx0,garden concert\n")
    add_examples(project, cfg, tmp_path / "others.csv", "negative", log=said.append)  # any format of [profile]
    assert [v.params["negatives"] for v in store.versions("t/candidate")] == [12, 12, 13]


@pytest.mark.parametrize("content, message", [
    ('{"text": "no user"}\n', "line 1 of bad.jsonl has no \"user\""),
    ("", "holds no example users"),
    ("not json\n", "bad.jsonl"),
])
def test_a_malformed_or_empty_file_is_refused_naming_the_fix(project, tmp_path, sent, content, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    with pytest.raises(ExamplesError, match=message) as refused:
        add_examples(project, settings(), bad, "positive")
    assert "{\"user\": ..., \"text\": ...} per JSONL line" in str(refused.value)
    assert added_users(settings(), "t").rows == [] and sent == []


def test_a_user_already_in_the_examples_is_refused(project, tmp_path, sent):
    cfg = settings()
    users_file(tmp_path / "again.jsonl", "neg", OTHER, users=2)  # neg0, neg1: the project's negatives
    with pytest.raises(ExamplesError, match=r"neg0 \(negatives\), neg1 \(negatives\): already example user\(s\) of "
                                            r"project t; remove them from .*again.jsonl"):
        add_examples(project, cfg, tmp_path / "again.jsonl", "positive")
    add_examples(project, cfg, users_file(tmp_path / "new.jsonl", "new", TARGET, users=1), "positive")
    with pytest.raises(ExamplesError, match=r"new0 \(positives\): already example user"):  # added before: kept
        add_examples(project, cfg, tmp_path / "new.jsonl", "negative")
    assert len(sent) == 2


def test_a_query_driven_project_has_no_example_users_to_add_to(tmp_path, monkeypatch, sent):
    from focuscrawl.project.loading import parse_project

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    project = parse_project({"name": "q", "target": "sites", "profile": {"query": "sad"},
                             "sites": [{"name": "s", "base_url": "https://s.example.org",
                                        "user_agent": "t/1 (+mailto:ops@example.org)"}]})
    with pytest.raises(ExamplesError, match="project q has no example users to add to: its profile is query-driven"):
        add_examples(project, settings(), users_file(tmp_path / "u.jsonl", "u", TARGET, users=1), "positive")


def test_without_a_running_platform_the_command_says_to_start_one(tmp_path, monkeypatch, capsys):
    from focuscrawl.cli.main import main

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    users_file(tmp_path / "u.jsonl", "u", TARGET, users=1)
    assert main(["examples", "add", "users", str(tmp_path / "u.jsonl")]) == 2
    assert "no platform is running out of" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["examples", "add", "users", str(tmp_path / "u.jsonl"), "--label", "maybe"])


def test_the_refit_failing_leaves_the_example_set_as_it_was(project, tmp_path, sent, monkeypatch):
    cfg = settings()

    def cannot(*args, **kwargs):
        raise ValueError("profile: the classifiers cannot be trained on these 25 example users (no terms)")

    monkeypatch.setattr("focuscrawl.platform.train.train_models", cannot)
    with pytest.raises(ExamplesError, match=r"cannot be trained .*; the users of .*u.jsonl were not added"):
        add_examples(project, cfg, users_file(tmp_path / "u.jsonl", "u", TARGET, users=1), "positive")
    assert added_users(cfg, "t").rows == [] and sent == []


@pytest.mark.parametrize("command, message", [
    (dict(action="examples", loop="sources", knob="t/reference", value=2), "loop sources loads no classifier"),
    (dict(action="examples", loop="fue", knob="t/pages", value=2), "<project>/reference \\(fue\\)"),
    (dict(action="promote", loop="fue", knob="t/candidate", value=0), "a model store version >= 1"),
])
def test_a_classifier_command_names_a_followed_classifier_and_a_version(command, message):
    with pytest.raises(ControlError, match=message):
        Command(**command)


def test_a_process_follows_the_stores_champion_and_a_chooser_rescores_its_candidates(tmp_path, monkeypatch,
                                                                                     toy_classifier):
    """A record about the process's classifier loads the store's champion, taken once between two batches; a stale
    record (an older version than the champion, as a starting process reads the compacted topic) loads nothing older."""
    from types import SimpleNamespace

    from focuscrawl.fue import RANKING_METHODS, UserChooser, UserClassifier
    from focuscrawl.fue.champion import ChampionFollower
    from focuscrawl.fue.chooser import ChooserStage
    from focuscrawl.fue.evidence import Post
    from focuscrawl.platform.train import store_versions

    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    cfg = settings()
    store = model_store(cfg)
    other = UserClassifier(min_df=1).fit([" ".join(TARGET)] * 3 + [" ".join(OTHER)] * 3, [0, 0, 0, 1, 1, 1])
    store_versions(SimpleNamespace(name="t"), cfg, {"reference": toy_classifier}, {"users": 6})
    follower = ChampionFollower(store, "t/reference", toy_classifier)
    chooser = UserChooser(RANKING_METHODS.create("HCP", classifier=toy_classifier))
    stage = ChooserStage(chooser, method="HCP", posts_topic="p", stats_topic="s", scores_topic="c", extract_topic="e",
                         lead=0, champion=follower)
    chooser.add_posts([Post("sad", 1.0, text="hopeless numb crying"), Post("fan", 2.0, text="football guitar")])
    assert [u for u, _ in chooser.top(2)] == ["sad", "fan"] and stage.status()["classifier"]["version"] == 1

    follower.apply(classifier_key("fue", "t/candidate"), {"value": 5})  # another classifier's: nothing
    follower.apply(classifier_key("fue", "t/reference"), {"value": 1})  # the one in use
    assert follower.take() is None
    store_versions(SimpleNamespace(name="t"), cfg, {"reference": other}, {"users": 6})  # the examples changed
    follower.apply(classifier_key("fue", "t/reference"), {"value": 1})  # a stale record: the champion is loaded
    stage.idle(caught_up=True)
    assert stage.status()["classifier"] == {"model": "t/reference", "version": 2, "changes": 1}
    assert [u for u, _ in chooser.top(2)] == ["fan", "sad"] and stage.counts["rescored"] == 2  # the held users rescored
    assert dict(chooser.top(2))["fan"] == pytest.approx(other.proba("football guitar"))
    assert {st.user for st in chooser.changes()} == {"sad", "fan"}  # their new scores go to the changelog
    stage.idle(caught_up=True)
    assert stage.counts["rescored"] == 2 and follower.take() is None
