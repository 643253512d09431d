"""Where the world's users get their words: real eRisk writings when given, generated text otherwise.

A corpus holds *donors* per class (a real eRisk subject, or a generated one); the population
composes each world user from a few donors of the user's own class (seed 000, section IV: the
reference classifier was trained on the eRisk 2017 users, 83 positive / 403 negative).
"""

from __future__ import annotations

import pickle
import random
import re
import tarfile
from pathlib import Path
from typing import Protocol

# A writing: (title, text, second of day it was posted or -1 when the corpus has no time).
Writing = tuple[str, str, int]


class Corpus(Protocol):
    def donors(self, label: bool) -> int: ...

    def size(self, label: bool, donor: int) -> int: ...

    def writing(self, label: bool, donor: int, j: int) -> Writing: ...


_WRITING = re.compile(
    r"<WRITING>\s*<TITLE>(.*?)</TITLE>\s*<DATE>\s*(\d{4})-\d\d-\d\d (\d\d):(\d\d):(\d\d)\s*</DATE>.*?<TEXT>(.*?)</TEXT>",
    re.S,
)


class EriskCorpus:
    """The eRisk 2017 training users (XML, one file per subject), parsed once and cached as a pickle.

    ``source`` is the ``erisk2017-train.tar.xz`` archive or a folder holding it or its unpacked
    ``dataset_adapter/``; the cache lives under ``cache_dir`` (the run's ``FOCUSCRAWL_VAR``).
    """

    def __init__(self, pools: dict[bool, list[list[Writing]]]) -> None:
        self._pools = pools

    @classmethod
    def load(cls, source: Path, cache_dir: Path) -> "EriskCorpus":
        source = Path(source)
        archive = source if source.is_file() else next(iter(sorted(source.rglob("erisk2017-train.tar.xz"))), None)
        stamp = archive.stat().st_mtime_ns if archive else 0
        cache = Path(cache_dir) / f"erisk-{stamp}.pickle"
        if cache.exists():
            with cache.open("rb") as f:
                return cls(pickle.load(f))
        pools: dict[bool, list[list[Writing]]] = {True: [], False: []}
        for name, xml in _subjects(source, archive):
            label = "positive_examples" in name
            pools[label].append([_writing(m) for m in _WRITING.finditer(xml)])
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

    def subject_documents(self) -> tuple[list[str], list[int]]:
        """One document per real subject (all writings concatenated) and its label: the reference training set."""
        docs, labels = [], []
        for label in (True, False):
            for pool in self._pools[label]:
                docs.append(" ".join(f"{t} {x}" for t, x, _ in pool))
                labels.append(int(label))
        return docs, labels


def _writing(m: re.Match) -> Writing:
    return m.group(1).strip(), m.group(6).strip(), int(m.group(3)) * 3600 + int(m.group(4)) * 60 + int(m.group(5))


def _subjects(source: Path, archive: Path | None):
    unpacked = sorted(source.rglob("*_examples_anonymous/*.xml")) if source.is_dir() else []
    if unpacked:
        for p in unpacked:
            yield str(p), p.read_text(encoding="utf-8", errors="replace")
        return
    if archive is None:
        raise FileNotFoundError(f"no erisk2017-train.tar.xz or unpacked eRisk XML under {source}")
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".xml"):
                yield member.name, tar.extractfile(member).read().decode("utf-8", errors="replace")


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

    def writing(self, label: bool, donor: int, j: int) -> Writing:
        rng = random.Random(((self.seed * 2 + int(label)) * 1_000_003 + donor) * 1_000_003 + j)
        bank = self._bank[label]
        title = bank[rng.randrange(len(bank))].capitalize() if rng.random() < 0.3 else ""
        return title, ". ".join(rng.choices(bank, k=rng.randint(1, 4))) + ".", -1
