"""Labelled writings: real eRisk subjects when given, generated text otherwise.

A corpus holds *donors* per class (a real eRisk subject, or a generated one). Two sides read it and
neither reads the other: the world (``focuscrawl.world``) composes each of its users from a few
donors of the user's own class, and the training code (``focuscrawl.fue``) trains classifiers on
donors (seed 000, section IV: the reference classifier was trained on the eRisk 2017 users, 83
positive / 403 negative). :func:`load_corpus` picks one. :func:`erisk_subjects` is the one eRisk
reader: the corpus donors and the project file's example users (``focuscrawl.project``) both come from it;
:func:`jsonl_objects` is the one JSONL reader of example files (example users and example pages).

Leakage: a classifier trained on the donors whose writings the world re-posts judges
text it has seen. :func:`donor_folds` splits the donors of each class into ``k`` folds;
:class:`SubsetCorpus` is one side of a split (the training donors, or the world's donors), and
the world side drops every writing whose text also occurs among the training donors' writings,
so no text used for training reaches a world user's history.
"""

from __future__ import annotations

import json
import pickle
import random
import tarfile
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator, Protocol, Sequence
from xml.etree import ElementTree

import numpy as np

# A writing: (title, text, second of day it was posted or -1 when the corpus has no time).
Writing = tuple[str, str, int]


class Corpus(Protocol):
    def donors(self, label: bool) -> int: ...

    def size(self, label: bool, donor: int) -> int: ...

    def writing(self, label: bool, donor: int, j: int) -> Writing: ...

    def hour_profile(self, label: bool, donor: int) -> np.ndarray | None:
        """24 weights (mean 1) of the donor's real posting hours, or None when the corpus has no times."""
        ...


def writing_body(title: str, text: str) -> str:
    """A writing as the world serves it and a classifier reads it (``title\\ntext``)."""
    return f"{title}\n{text}" if title and text else (title or text)


def hour_weights(seconds_of_day) -> np.ndarray | None:
    """24 hourly weights with mean 1 from real posting times (add-one smoothed); None without times."""
    hours = [s // 3600 for s in seconds_of_day if s >= 0]
    if not hours:
        return None
    counts = np.bincount(np.asarray(hours, dtype=np.int64) % 24, minlength=24) + 1.0
    return counts * 24.0 / counts.sum()


def load_corpus(seed: int, data_dir: Path | None, cache_dir: Path) -> Corpus:
    """Real eRisk writings when ``data_dir`` holds them (``erisk2017/``), generated text otherwise."""
    if data_dir is not None:
        erisk = Path(data_dir) / "erisk2017"
        if erisk.is_dir() or Path(data_dir).name == "erisk2017":
            return EriskCorpus.load(erisk if erisk.is_dir() else Path(data_dir), Path(cache_dir) / "world")
    return GeneratedCorpus(seed)


class EriskCorpus:
    """The eRisk 2017 training users (labelled by folder, see :func:`erisk_subjects`), parsed once and
    cached as a pickle.

    ``source`` is what :func:`erisk_subjects` reads: the ``erisk2017-train.tar.xz`` archive, a
    folder holding it, or its unpacked ``dataset_adapter/``; the cache lives under ``cache_dir``
    (the run's ``FOCUSCRAWL_VAR``). Unlabelled subject files are no donors and are left out.
    """

    def __init__(self, pools: dict[bool, list[list[Writing]]]) -> None:
        self._pools = pools

    @classmethod
    def load(cls, source: Path, cache_dir: Path) -> "EriskCorpus":
        source = Path(source)
        stamp = max((p.stat().st_mtime_ns for p in (source, *source.rglob("*")) if p.is_file()), default=0)
        cache = Path(cache_dir) / f"erisk-{stamp}-{_ERISK_READER}.pickle"
        if cache.exists():
            with cache.open("rb") as f:
                return cls(pickle.load(f))
        pools: dict[bool, list[list[Writing]]] = {True: [], False: []}
        for subject in erisk_subjects(source):
            if subject.label is not None:
                pools[subject.label].append(list(subject.writings))
        if not pools[True] or not pools[False]:
            raise FileNotFoundError(f"no eRisk subjects of both classes under {source}")
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        with tmp.open("wb") as f:
            pickle.dump(pools, f, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(cache)
        return cls(pools)

    def donors(self, label: bool) -> int:
        return len(self._pools[label])

    def size(self, label: bool, donor: int) -> int:
        return len(self._pools[label][donor])

    def writing(self, label: bool, donor: int, j: int) -> Writing:
        return self._pools[label][donor][j]

    def hour_profile(self, label: bool, donor: int) -> np.ndarray | None:
        """The subject's real posting hours (the ``<DATE>`` of every writing), as 24 weights of mean 1."""
        return hour_weights(sod for _, _, sod in self._pools[label][donor])

    def subject_documents(self) -> tuple[list[str], list[int]]:
        """One document per real subject (all writings concatenated) and its label: the reference training set."""
        docs, labels = [], []
        for label in (True, False):
            for pool in self._pools[label]:
                docs.append(" ".join(f"{t} {x}" for t, x, _ in pool))
                labels.append(int(label))
        return docs, labels


# -- the eRisk reader ----------------------------------------------------------------------------

# Names the reading rules in the corpus cache, so a cache written under other rules is not reused.
_ERISK_READER = "xml1"
_ARCHIVES = (".tar.xz", ".tar.gz", ".tgz", ".tar")
_FIX = "point at the .tar.xz, a folder of subject XML files, or one XML file"


@dataclass(frozen=True)
class EriskSubject:
    """One subject file of an eRisk collection (Losada & Crestani, "A Test Collection for Research on
    Depression and Language Use", CLEF 2016): ``<INDIVIDUAL><ID/><WRITING><TITLE/><DATE/>
    <INFO/><TEXT/></WRITING>...</INDIVIDUAL>``."""

    name: str                       # the file or archive member it was read from
    id: str                         # its ``<ID>``, or the file's stem when it has none
    label: bool | None              # its class from its folder (see :func:`erisk_label`)
    writings: tuple[Writing, ...]   # in file order


def jsonl_objects(path: Path, shape: str, error: Callable[[str], Exception] = ValueError
                  ) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of each non-blank line of a JSONL example file. A line that is not a JSON
    object raises ``error(message)``, the message naming the line and ``shape``, the object a line holds
    (e.g. ``{"user", "text"}``)."""
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise error(f"line {n} of {path.name} is not JSON ({exc.args[0]}); "
                            f"write one {shape} object per line") from None
            if not isinstance(row, dict):
                raise error(f"line {n} of {path.name} is not a JSON object; write one {shape} object per line")
            yield n, row


def erisk_label(name: str) -> bool | None:
    """The class a collection labelled by folder gives a subject file: True under
    ``positive_examples*/``, False under ``negative_examples*/`` (the nearest such folder), None elsewhere."""
    for folder in reversed(PurePosixPath(name.replace("\\", "/")).parts[:-1]):
        if "positive_examples" in folder or "negative_examples" in folder:
            return "positive_examples" in folder
    return None


def erisk_subjects(path: Path, label: bool | None = None) -> Iterator[EriskSubject]:
    """Each subject of an eRisk collection at ``path``: one XML file, a folder of them (sorted by
    path), an archive (``.tar.xz`` as published, in member order), or a folder holding archives and no XML.

    The files are read as XML: titles and texts come back stripped, with character references
    decoded (``&#8217;`` becomes a right single quote); a writing's time is its ``<DATE>`` as
    seconds of the day, -1 without one. ``label`` True or False reads that class and the
    unlabelled files only; the others are skipped before they are parsed. ValueError names the
    file and the fix.
    """
    for name, read in _erisk_files(Path(path)):
        own = erisk_label(name)
        if label is None or own is None or own == label:
            yield _erisk_subject(name, own, read())


def _erisk_files(path: Path) -> Iterator[tuple[str, Callable[[], bytes]]]:
    if path.is_dir():
        files = sorted(path.rglob("*.xml")) or sorted(p for p in path.rglob("*") if p.name.lower().endswith(_ARCHIVES))
        if not files:
            raise ValueError(f"{path} holds no eRisk XML file and no archive of them; {_FIX}")
        for p in files:
            yield from _erisk_files(p)
    elif path.suffix.lower() == ".xml":
        yield str(path), path.read_bytes
    else:
        try:
            tar = tarfile.open(path, "r:*")
        except (tarfile.TarError, OSError) as exc:
            raise ValueError(f"{path} is not a readable eRisk archive ({exc}); {_FIX}") from None
        with tar:
            for m in tar:  # streamed: a member is read, or skipped, while the archive is at it
                if m.isfile() and m.name.endswith(".xml"):
                    yield m.name, tar.extractfile(m).read


def _erisk_subject(name: str, label: bool | None, data: bytes) -> EriskSubject:
    try:  # undecodable bytes become U+FFFD rather than failing the file; no DTD or external entity is loaded
        root = ElementTree.fromstring(data.decode("utf-8", errors="replace"))
    except ElementTree.ParseError as exc:
        raise ValueError(f"{name} is not well-formed XML ({exc}); an eRisk subject file is "
                         "<INDIVIDUAL><ID>...</ID><WRITING><TITLE>...</TITLE><TEXT>...</TEXT></WRITING>...</INDIVIDUAL>") from None
    writings = tuple(_erisk_writing(name, w) for w in root.iter("WRITING"))
    if not writings:
        raise ValueError(f"{name} holds no <WRITING> with <TITLE> and <TEXT>; it is not eRisk XML")
    return EriskSubject(name, _inner_text(root, "ID") or PurePosixPath(name).stem, label, writings)


def _erisk_writing(name: str, writing: ElementTree.Element) -> Writing:
    title, text, date = (_inner_text(writing, tag) for tag in ("TITLE", "TEXT", "DATE"))
    if not date:
        return title, text, -1
    try:
        when = datetime.fromisoformat(date)
    except ValueError:
        raise ValueError(f"{name}: <DATE>{date}</DATE> is not a date; write YYYY-MM-DD HH:MM:SS") from None
    return title, text, when.hour * 3600 + when.minute * 60 + when.second


def _inner_text(element: ElementTree.Element, tag: str) -> str:
    found = element.find(tag)
    return "" if found is None else "".join(found.itertext()).strip()


_COMMON = (
    "the a and to of in it is that for on you this with was be have are not but they my at just like so "
    "what about all if get one can do out would there time up people when more think no know good really "
    "game new year work day make see other some which want go because first play team last way world "
    "back well even here much also best could any great thing right video look post any show read movie "
    "car music food city price phone better game season point watch build code book story old fun"
).split()
_TARGET = (
    "depressed depression sad lonely alone tired anxiety anxious hopeless therapist therapy meds "
    "worthless empty cry crying sleep insomnia numb hurt pain suicidal panic scared hate myself "
    "nobody cares isolated exhausted failure miserable struggling broken"
).split()


class GeneratedCorpus:
    """Text made of common words and, for positive users, a share ``text_signal`` of target-profile words.

    Negative users use target words too, ten times less often, so single posts are ambiguous
    while whole histories separate (seed 000, section IV: text is the strongest signal).
    A bank of seeded sentences per class is built once; a writing strings a few together.
    """

    def __init__(self, seed: int, text_signal: float = 0.08, donors_per_class: int = 500,
                 writings_per_donor: int = 300, sentences: int = 4000) -> None:
        self.seed = seed
        self._donors = donors_per_class
        self._writings = writings_per_donor
        rng = random.Random(seed)
        self._bank = {label: [self._sentence(rng, text_signal if label else text_signal / 10) for _ in range(sentences)]
                      for label in (False, True)}

    @staticmethod
    def _sentence(rng: random.Random, share: float) -> str:
        n = rng.randint(4, 14)
        return " ".join(rng.choice(_TARGET) if rng.random() < share else rng.choice(_COMMON) for _ in range(n))

    def donors(self, label: bool) -> int:
        return self._donors

    def size(self, label: bool, donor: int) -> int:
        return self._writings

    @lru_cache(maxsize=400_000)  # a fold split reads every writing several times (training, exclusion, world)
    def writing(self, label: bool, donor: int, j: int) -> Writing:
        rng = random.Random(((self.seed * 2 + int(label)) * 1_000_003 + donor) * 1_000_003 + j)
        bank = self._bank[label]
        title = bank[rng.randrange(len(bank))].capitalize() if rng.random() < 0.3 else ""
        return title, ". ".join(rng.choices(bank, k=rng.randint(1, 4))) + ".", -1

    def hour_profile(self, label: bool, donor: int) -> np.ndarray | None:
        """Generated text has no posting times."""
        return None


# -- donor-disjoint folds ------------------------------------------------------------------------


@dataclass(frozen=True)
class DonorFold:
    """One fold of a donor split: the donor ids (per class) that train classifiers and those the world uses."""

    fold: int
    folds: int
    train: dict[bool, tuple[int, ...]]
    world: dict[bool, tuple[int, ...]]

    def as_json(self) -> dict:
        return {"fold": self.fold, "folds": self.folds,
                "train_donors": {"positive": list(self.train[True]), "negative": list(self.train[False])},
                "world_donors": {"positive": list(self.world[True]), "negative": list(self.world[False])}}


def donor_folds(corpus: Corpus, k: int, seed: int = 0) -> list[DonorFold]:
    """``k`` class-stratified donor folds: fold ``f``'s world uses the donors of part ``f``, its
    classifiers train on the other ``k - 1`` parts (k-fold cross-validation over donors).

    The donors of each class are shuffled with ``seed`` and dealt round-robin into ``k`` parts.
    """
    if k < 2:
        raise ValueError(f"--folds {k}: donor-disjoint folds need k >= 2 (k parts: one builds the world, "
                         "the others train the classifiers)")
    rng = np.random.default_rng(seed)
    parts: dict[bool, list[list[int]]] = {}
    for label in (True, False):
        n = corpus.donors(label)
        if n < k:
            raise ValueError(f"{n} {'positive' if label else 'negative'} donors cannot fill {k} folds; lower --folds")
        order = rng.permutation(n).tolist()
        parts[label] = [sorted(order[f::k]) for f in range(k)]
    return [DonorFold(f, k,
                      {lb: tuple(sorted(d for g in range(k) if g != f for d in parts[lb][g])) for lb in (True, False)},
                      {lb: tuple(parts[lb][f]) for lb in (True, False)})
            for f in range(k)]


class SubsetCorpus:
    """Some donors of a corpus, renumbered from 0; ``exclude`` texts (writing bodies) are dropped.

    The world side of a :class:`DonorFold` is ``SubsetCorpus(corpus, fold.world,
    exclude=training_bodies(corpus, fold.train))``: writings whose body equals one of a training
    donor's (short replies such as "thanks", cross-posts) never reach the world, and donors left
    with no writing are dropped. ``donor_ids[label][i]`` is the original id of local donor ``i``.
    """

    def __init__(self, corpus: Corpus, donors: dict[bool, Sequence[int]], exclude: frozenset[str] | set[str] = frozenset()) -> None:
        self.corpus = corpus
        self._kept: dict[bool, list[list[int]]] = {}
        self.donor_ids: dict[bool, list[int]] = {}
        for label in (True, False):
            self._kept[label], self.donor_ids[label] = [], []
            for d in donors[label]:
                keep = [j for j in range(corpus.size(label, d))
                        if not exclude or writing_body(*corpus.writing(label, d, j)[:2]) not in exclude]
                if keep:
                    self._kept[label].append(keep)
                    self.donor_ids[label].append(d)
            if not self._kept[label]:
                raise ValueError(f"no {'positive' if label else 'negative'} donor with writings left in this subset")

    def donors(self, label: bool) -> int:
        return len(self._kept[label])

    def size(self, label: bool, donor: int) -> int:
        return len(self._kept[label][donor])

    def writing(self, label: bool, donor: int, j: int) -> Writing:
        return self.corpus.writing(label, self.donor_ids[label][donor], self._kept[label][donor][j])

    def hour_profile(self, label: bool, donor: int) -> np.ndarray | None:
        kept = self._kept[label][donor]
        d = self.donor_ids[label][donor]
        if all(self.corpus.writing(label, d, j)[2] < 0 for j in kept[:1]):
            return None
        return hour_weights(self.corpus.writing(label, d, j)[2] for j in kept)


def training_bodies(corpus: Corpus, donors: dict[bool, Sequence[int]]) -> frozenset[str]:
    """Every writing body of these donors (what the classifiers of a fold are trained on)."""
    return frozenset(writing_body(*corpus.writing(label, d, j)[:2])
                     for label in (True, False) for d in donors[label] for j in range(corpus.size(label, d)))



def fold_corpora(corpus: Corpus, train: dict[bool, Sequence[int]], world: dict[bool, Sequence[int]]
                 ) -> tuple[SubsetCorpus, SubsetCorpus]:
    """The two sides of a donor split: the training donors, and the world's donors without any writing
    whose body a training donor also wrote (so no training text reaches a world user)."""
    return SubsetCorpus(corpus, train), SubsetCorpus(corpus, world, exclude=training_bodies(corpus, train))
