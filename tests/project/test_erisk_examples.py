"""One eRisk reader: the project's example users and the corpora's donors are the same subjects and writings."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from focuscrawl.core.corpora import EriskCorpus, erisk_subjects, writing_body
from focuscrawl.project.examples import read_examples
from focuscrawl.project.model import Profile


def subject(ident: str, *writings: tuple[str, str, str]) -> str:
    body = "".join(f"<WRITING>\n<TITLE> {t} </TITLE>\n<DATE> {d} </DATE>\n<INFO> reddit post </INFO>\n<TEXT> {x} </TEXT>\n</WRITING>\n"
                   for t, d, x in writings)
    return f"<INDIVIDUAL>\n<ID>{ident}</ID>\n{body}</INDIVIDUAL>\n"


# The published layout (dataset_adapter/{positive,negative}_examples_anonymous/), with a character
# reference as the real files have (&#8217; 224 times) and writings with an empty title or text.
FILES = {
    "dataset_adapter/positive_examples_anonymous/train_subject7.xml": subject(
        "train_subject7", ("  ", "2015-07-01 19:07:30", "I can&#8217;t sleep"), ("so tired", "2015-06-30 06:00:05", "")),
    "dataset_adapter/negative_examples_anonymous/train_subject3.xml": subject(
        "train_subject3", ("game night", "2014-01-02 23:59:59", "fun &amp; loud")),
    "dataset_adapter/negative_examples_anonymous/train_subject5.xml": subject(
        "train_subject5", ("", "2016-03-04 00:00:00", "new car")),
}
POSITIVES = {"train_subject7": ["I can\u2019t sleep", "so tired"]}
NEGATIVES = {"train_subject3": ["game night\nfun & loud"], "train_subject5": ["new car"]}


@pytest.fixture(params=["archive", "folder"])
def collection(request, tmp_path) -> Path:
    """One eRisk collection, as the published .tar.xz or unpacked."""
    if request.param == "folder":
        for name, text in FILES.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        return tmp_path / "dataset_adapter"
    path = tmp_path / "erisk-train.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        for name, text in FILES.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return path


def test_project_and_corpora_read_the_same_subjects_and_writings(collection, tmp_path):
    profile = Profile(positives=str(collection), negatives=str(collection))
    assert read_examples(collection, "erisk", "positives") == POSITIVES
    assert read_examples(collection, "erisk", "negatives") == NEGATIVES
    histories, labels = profile.training_set()
    assert (histories, labels) == ([*POSITIVES.values(), *NEGATIVES.values()], [1, 0, 0])

    corpus = EriskCorpus.load(collection, tmp_path / "cache")
    donors = {label: [[writing_body(t, x) for t, x, _ in (corpus.writing(label, d, j) for j in range(corpus.size(label, d)))]
                      for d in range(corpus.donors(label))] for label in (True, False)}
    assert donors == {True: list(POSITIVES.values()), False: list(NEGATIVES.values())}
    assert [corpus.writing(True, 0, j)[2] for j in range(2)] == [19 * 3600 + 7 * 60 + 30, 6 * 3600 + 5]


def test_an_unlabelled_subject_counts_for_either_role_and_is_no_donor(tmp_path):
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "mine.xml").write_text(subject("u1", ("hello", "2015-01-01 10:00:00", "there")))
    assert read_examples(tmp_path, "erisk", "positives") == {**POSITIVES, "u1": ["hello\nthere"]}
    assert read_examples(tmp_path, "erisk", "negatives") == {**NEGATIVES, "u1": ["hello\nthere"]}
    corpus = EriskCorpus.load(tmp_path, tmp_path / "cache")
    assert (corpus.donors(True), corpus.donors(False)) == (1, 2)


def test_malformed_subjects_name_the_file_and_the_fix(tmp_path):
    raw_amp = tmp_path / "a.xml"
    raw_amp.write_text("<INDIVIDUAL><ID>a</ID><WRITING><TITLE>a & b</TITLE><TEXT>x</TEXT></WRITING></INDIVIDUAL>")
    with pytest.raises(ValueError, match=r"a\.xml is not well-formed XML .*<INDIVIDUAL><ID>"):
        list(erisk_subjects(raw_amp))
    bad_date = tmp_path / "b.xml"
    bad_date.write_text(subject("b", ("t", "July 1st", "x")))
    with pytest.raises(ValueError, match=r"b\.xml: <DATE>July 1st</DATE> is not a date; write YYYY-MM-DD HH:MM:SS"):
        list(erisk_subjects(bad_date))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds no eRisk XML file and no archive of them; point at the .tar.xz"):
        read_examples(empty, "erisk")


def test_the_real_collection_reads_the_same_both_ways(shared_data, cfg):
    """The eRisk 2017 training archive: 83 + 403 subjects, the same writings for the project and the world."""
    archive = Path(shared_data) / "erisk2017" / "erisk2017-train.tar.xz"
    histories, labels = Profile(positives=str(archive), negatives=str(archive)).training_set()
    corpus = EriskCorpus.load(archive.parent, Path(cfg.var_dir) / "world")
    donors = [[writing_body(t, x) for t, x, _ in (corpus.writing(label, d, j) for j in range(corpus.size(label, d)))]
              for label in (True, False) for d in range(corpus.donors(label))]
    assert (labels.count(1), labels.count(0), sum(map(len, histories))) == (83, 403, 295_023)
    assert histories == donors
    assert not any("&#8217;" in w for h in histories for w in h)  # character references are decoded
