"""The page focus: example pages in the project file -> a versioned, calibrated page relevance model measured
on held-out pages it never trained on; malformed focus input gets one error naming the key and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from focuscrawl.cli.main import main as cli_main
from focuscrawl.project.loading import load_project
from focuscrawl.project.values import ProjectError
from focuscrawl.relevance.evaluation import auc, bootstrap, precision_at, split_pages
from focuscrawl.relevance.examples import ExampleError, ExamplePage, distinct, page_key
from helpers import HttpSite

HISTORY = ["The battle of {} was fought in the war between the kingdom and the empire; the army of the king "
           "besieged the castle and the treaty that ended the war gave the duke his lands back.",
           "In the {} century the dynasty ruled the empire; the emperor's armies fought the rebels, and the "
           "revolution that followed brought down the monarchy and its medieval parliament.",
           "The {} treaty ended the long war; historians of the ancient and medieval kingdoms read the "
           "chronicles of the siege, the crusade and the king's coronation."]
OTHER = ["The {} recipe needs flour, sugar and butter; bake the cake in the oven and serve it with fresh fruit "
         "from the garden.",
         "Our {} football team won the match; the striker scored twice and the fans sang in the stadium "
         "until the final whistle.",
         "The {} camera has a new lens and sensor; photographers praise its battery, its screen and the "
         "quality of its pictures."]


def html(text: str) -> bytes:
    return f"<html><head><title>x</title></head><body><article><p>{text}</p></article></body></html>".encode()


@pytest.fixture
def site():
    routes = {"/robots.txt": (200, {}, b"User-agent: *\nDisallow: /private/\n")}
    for i in range(6):
        routes[f"/pages/h{i}.html"] = (200, {"Content-Type": "text/html"}, html(HISTORY[i % 3].format(i)))
        routes[f"/pages/o{i}.html"] = (200, {"Content-Type": "text/html"}, html(OTHER[i % 3].format(i)))
    routes["/private/secret.html"] = (200, {"Content-Type": "text/html"}, html(HISTORY[0].format("secret")))
    with HttpSite(routes) as s:
        yield s


@pytest.fixture
def folder(tmp_path, monkeypatch, site):
    monkeypatch.setenv("FOCUSCRAWL_VAR", str(tmp_path / "var"))
    monkeypatch.setenv("FOCUSCRAWL_ALLOW_PRIVATE_HOSTS", f"127.0.0.1:{site.port}")
    monkeypatch.setenv("FC_SITE", f"http://127.0.0.1:{site.port}")
    (tmp_path / "history").mkdir()
    for i in range(2):
        (tmp_path / "history" / f"local{i}.html").write_bytes(html(HISTORY[(i + 1) % 3].format(f"local {i}")))
    (tmp_path / "cooking.txt").write_text(OTHER[0].format("plain text"))
    lines = [{"text": OTHER[i % 3].format(f"jsonl {i}"), "label": 0} for i in range(3)]
    # the same page as a positive URL: one page, not two
    lines.append({"url": f"http://127.0.0.1:{site.port}/pages/h0.html", "text": HISTORY[0].format(0), "label": "positive"})
    (tmp_path / "pages.jsonl").write_text("".join(json.dumps(row) + "\n" for row in lines))
    return tmp_path


PROJECT = """\
name = "focus"
target = "sites"

[profile]
languages = ["en"]

[profile.pages]
positives = ["${FC_SITE}/pages/h0.html", "${FC_SITE}/pages/h1.html", "${FC_SITE}/pages/h2.html",
             "${FC_SITE}/pages/h3.html", "history"]
negatives = ["${FC_SITE}/pages/o0.html", "${FC_SITE}/pages/o1.html", "cooking.txt"]
examples = "pages.jsonl"

[[sites]]
name = "site"
base_url = "${FC_SITE}"
user_agent = "focuscrawl-test/1 (+mailto:ops@example.org)"
politeness_delay = 0

[loops.fue]
enabled = false
"""


def write(folder: Path, text: str = PROJECT) -> Path:
    path = folder / "focuscrawl.toml"
    path.write_text(text)
    return path


def train(path: Path, capsys) -> tuple[int, dict | None, str]:
    rc = cli_main(["train", str(path)])
    out, err = capsys.readouterr()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return rc, json.loads(lines[-1]) if lines else None, err


def test_train_fetches_each_url_once_and_registers_a_measured_calibrated_version(folder, site, capsys):
    rc, out, err = train(write(folder), capsys)
    assert rc == 0, err
    model = out["page_relevance"]
    assert model["model"] == "TFIDF-LR" and model["version"] == 1 and model["promoted"]
    # 6 URLs + 2 files + 1 text + 4 JSONL lines, one of them a URL already listed: 12 distinct pages.
    assert model["pages"] + model["train_pages"] == 12
    for figure in ("auc", "precision_at_threshold"):
        d = model[figure]
        assert d["low"] <= d["value"] <= d["high"], (figure, d)
    paths = [path for _, path in site.log]
    assert paths.count("/robots.txt") == 1  # robots.txt read, obeyed, cached
    assert all(paths.count(f"/pages/{p}.html") == 1 for p in ("h0", "h1", "h2", "h3", "o0", "o1"))
    split = json.loads((Path(model["path"]) / "split.json").read_text())
    train_keys, held_keys = {k for k, *_ in split["train"]}, {k for k, *_ in split["held_out"]}
    assert not train_keys & held_keys and len(train_keys | held_keys) == 12
    assert {label for _, label, _ in split["held_out"]} == {0, 1}

    from focuscrawl.config import settings
    from focuscrawl.relevance.train import store_for

    meta, fitted = store_for(load_project(folder / "focuscrawl.toml"), settings()).load("TFIDF-LR")
    scores = fitted.predict_proba([HISTORY[1].format("unseen"), OTHER[2].format("unseen")])
    assert ((0 <= scores) & (scores <= 1)).all() and scores[0] > scores[1]

    rc, again, _ = train(folder / "focuscrawl.toml", capsys)
    assert rc == 0 and again["page_relevance"]["version"] == 2  # a new version each run; promotion decides


def test_the_second_model_trains_from_the_same_examples(folder, capsys):
    path = write(folder, PROJECT.replace('examples = "pages.jsonl"', 'examples = "pages.jsonl"\nmodel = "lsa-lr"'))
    rc, out, err = train(path, capsys)
    assert rc == 0, err
    assert out["page_relevance"]["model"] == "LSA-LR" and out["page_relevance"]["version"] == 1


# -- malformed focus input: one error naming the key and the fix, nothing trained or started ------------

MALFORMED = [
    ("missing example file", ('"cooking.txt"', '"gone.txt"'), "profile.pages.negatives[2]", "does not exist; point at"),
    ("empty class", ('negatives = ["${FC_SITE}/pages/o0.html", "${FC_SITE}/pages/o1.html", "cooking.txt"]\nexamples = "pages.jsonl"', ""),
     "profile.pages.negatives", "no negative example page; list pages about other topics"),
    ("too few of a class", ('"${FC_SITE}/pages/o1.html", "cooking.txt"]\nexamples = "pages.jsonl"', '"${FC_SITE}/pages/o1.html"]'),
     "profile.pages.negatives", "2 negative example page(s); give at least 3"),
    ("unknown language code", ('languages = ["en"]', 'languages = ["en", "eng"]'), "profile.languages",
     "not a language code"),
    ("language not a list", ('languages = ["en"]', 'languages = "en"'), "profile.languages", 'languages = ["en"]'),
    ("unknown model", ('examples = "pages.jsonl"', 'examples = "pages.jsonl"\nmodel = "TFIDF"'), "profile.pages.model",
     "registered: LSA-LR, TFIDF-LR"),
    ("JSONL line without a label", None, "profile.pages.examples", 'add "label": 1 or 0'),
]


@pytest.mark.parametrize("case, edit, key, fix", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_focus_input_is_one_error_naming_key_and_fix(folder, capsys, case, edit, key, fix):
    if edit is None:
        (folder / "pages.jsonl").write_text('{"text": "a page", "label": 0}\n{"text": "another page"}\n')
        text = PROJECT
    else:
        assert edit[0] in PROJECT
        text = PROJECT.replace(*edit)
    path = write(folder, text)
    with pytest.raises(ProjectError) as err:
        load_project(path)
    assert err.value.key == key and fix in err.value.problem, str(err.value)
    assert "\n" not in str(err.value)
    rc, out, stderr = train(path, capsys)
    assert rc == 2 and out is None and f"{key}: " in stderr and fix in stderr
    assert not (folder / "var" / "models").exists()  # nothing trained


def test_a_url_robots_forbids_is_refused_by_name_and_never_fetched(folder, site, capsys):
    path = write(folder, PROJECT.replace('"history"]', '"history", "${FC_SITE}/private/secret.html"]'))
    load_project(path)  # the file is fine; robots.txt is read at training, through the fetch layer
    rc, out, err = train(path, capsys)
    assert rc == 2 and out is None
    assert "profile.pages.positives[5]: robots.txt of 127.0.0.1" in err and "forbids" in err and "list the file" in err
    assert "/private/secret.html" not in [p for _, p in site.log]
    assert not list((folder / "var").glob("models/focus/pages/*/v*"))  # no version registered


def test_up_starts_nothing_for_a_malformed_focus(folder):
    from focuscrawl.platform.up import Platform

    path = write(folder, PROJECT.replace('languages = ["en"]', 'languages = ["klingon"]'))
    with pytest.raises(ProjectError, match="profile.languages"):
        Platform(path)
    assert not (folder / "var" / "run").exists()


# -- train and evaluation pages never overlap --------------------------------------------------------------


def pages(n_pos: int, n_neg: int, dup: int = 0) -> list[ExamplePage]:
    out = [ExamplePage(page_key(f"https://e.org/p{i}", ""), 1, f"p{i}", "en", "t") for i in range(n_pos)]
    out += [ExamplePage(page_key(None, f"negative text {i}"), 0, f"negative text {i}", "en", "t") for i in range(n_neg)]
    return out + out[:dup]


@pytest.mark.parametrize("n_pos, n_neg", [(3, 3), (4, 9), (20, 7), (50, 50)])
def test_split_is_disjoint_by_page_and_keeps_both_classes_on_both_sides(n_pos, n_neg):
    declared = pages(n_pos, n_neg, dup=3)
    unique = distinct(declared)
    assert len(unique) == n_pos + n_neg  # a page declared twice is one page
    for seed in range(20):
        split = split_pages(unique, 0.3, seed)
        assert split.overlap() == set()
        assert {p.key for p in split.train} | {p.key for p in split.held_out} == {p.key for p in unique}
        for side in (split.train, split.held_out):
            assert {p.label for p in side} == {0, 1}


def test_the_same_url_in_two_spellings_is_one_page_and_in_both_classes_an_error():
    a = ExamplePage(page_key("https://E.org/a?utm_source=x", ""), 1, "x", "en", "profile.pages.positives[0]")
    b = ExamplePage(page_key("https://e.org/a", ""), 1, "y", "en", "profile.pages.examples (line 1)")
    assert distinct([a, b]) == [a]
    with pytest.raises(ExampleError, match=r"profile.pages.negatives\[0\]: the page https://e.org/a is also a positive"):
        distinct([a, ExamplePage(b.key, 0, "y", "en", "profile.pages.negatives[0]")])
    with pytest.raises(ValueError, match="distinct"):
        split_pages([a, a], 0.3, 0)


def test_auc_precision_and_their_intervals():
    y = np.array([1, 1, 0, 0])
    assert auc(y, np.array([0.9, 0.8, 0.1, 0.2])) == 1.0
    assert auc(y, np.array([0.5, 0.5, 0.5, 0.5])) == 0.5
    assert np.isnan(auc(np.array([1, 1]), np.array([0.3, 0.4])))
    assert precision_at(y, np.array([0.9, 0.4, 0.6, 0.1]), 0.5) == 0.5
    assert np.isnan(precision_at(y, np.zeros(4), 0.5))
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    noisy = labels * 0.6 + rng.normal(0, 0.5, 400)
    interval = bootstrap(labels, noisy, auc, rounds=500)
    assert interval.low < interval.value < interval.high and interval.high - interval.low < 0.15
    assert bootstrap(labels[:40], noisy[:40], auc, rounds=500).high - bootstrap(labels[:40], noisy[:40], auc, rounds=500).low \
        > interval.high - interval.low  # fewer pages, a wider interval
