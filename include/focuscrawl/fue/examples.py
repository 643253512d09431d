"""The project's example set: the example users the FUE loop's classifiers are fitted on.

Seed 000 (*Real-time focused extraction of social media users*) fits its reference classifier on a training set of
example users (section IV: 486 users, 83 positive) and, every five minutes, a new prediction classifier "from the
original training set plus the new pseudo-examples" (section V). On the platform the training set is the project's:
the users of its ``[profile] positives/negatives`` files (``Project.profile.training_set()``) plus the users
`focuscrawl examples add` added while it ran, kept in the Delta table ``fue_example_users`` (:data:`EXAMPLE_USERS`),
never in the user's project file. :func:`example_set` reads both for every fit that starts from them: the reference
and candidate classifiers (:func:`focuscrawl.platform.train.train_models`) and each pseudo-trained refresh
(:func:`focuscrawl.fue.batch.refresh`, and the registry's held-out figures of it, :func:`focuscrawl.fue.batch.held_out`).

It sits in the FUE layer, below the project and the platform, so the batch side can read it: the project comes in as
an argument (its ``name`` and ``profile``); :func:`focuscrawl.orchestration.schedules.active_example_set` gives the
one ``focuscrawl up`` made active.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable, TypeVar

import pyarrow as pa

from focuscrawl.fue.classifier import whole_user_documents
from focuscrawl.lake.tables import Column, table

T = TypeVar("T")
EXAMPLE_USERS = table(
    "fue_example_users",
    "Example users added to a project's FUE training set while it ran (focuscrawl examples add), one row per user; "
    "the project's example set is its files' users plus its rows here, and every fit of the reference and candidate "
    "classifiers reads both (the Delta version read is the models' lineage).",
    [
        Column("project", pa.string(), "the project whose example set the user joined", nullable=False),
        Column("user", pa.string(), "the example user's name, as the file gave it", nullable=False),
        Column("label", pa.int64(), "1: a positive example (a target user), 0: a negative one", nullable=False),
        Column("writings", pa.list_(pa.string()), "the user's writings, in the file's order", nullable=False),
        Column("source", pa.string(), "the file the user was read from", nullable=False),
        Column("added_at_ms", pa.int64(), "when the command added it, Unix epoch milliseconds", nullable=False),
        Column("by", pa.string(), "who added it: the operating-system user of the command line", nullable=False),
    ],
)


@dataclass(frozen=True)
class AddedUsers:
    """A project's rows of :data:`EXAMPLE_USERS` (``user``, ``label``, ``writings``, in the order added) and the table's
    Delta version they were read at (None: no table yet)."""

    rows: list[dict]
    delta_version: int | None

    def digest(self) -> str:
        """What the rows hold (users, labels, writings), whatever order they were read in."""
        h = hashlib.blake2b(digest_size=12)
        for row in sorted(self.rows, key=lambda r: (r["user"], r["label"])):
            h.update(json.dumps([row["user"], row["label"], row["writings"]]).encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def counts(self) -> str:
        """``2 positive, 1 negative``, for the fit's log."""
        positives = sum(r["label"] for r in self.rows)
        return f"{positives} positive, {len(self.rows) - positives} negative"


def added_users(cfg, project: str) -> AddedUsers:
    """The users `focuscrawl examples add` added to ``project``'s example set."""
    from focuscrawl.lake import open_table
    from focuscrawl.lake.storage import storage_options

    found = open_table(EXAMPLE_USERS.path(cfg), storage_options(cfg) or None)
    if found is None:
        return AddedUsers([], None)
    rows = found.to_pyarrow_table(columns=["user", "label", "writings", "added_at_ms"],
                                  filters=[("project", "=", project)]).to_pylist()
    rows.sort(key=lambda r: (r["added_at_ms"], r["user"]))
    return AddedUsers([{k: r[k] for k in ("user", "label", "writings")} for r in rows], int(found.version()))


@dataclass
class ExampleSet:
    """A project's example users: its files' and the added ones (:func:`example_set`). ``fingerprint`` is what the set
    depends on (the files' path, size, mtime and format, the added users' count and digest, the reading code's
    version); the users are read on first use, so a fit that finds its models up to date reads none."""

    profile: object  # the project's [profile]: its example files
    added: AddedUsers
    fingerprint: dict
    cache_dir: Path

    @property
    def digest(self) -> str:
        """The whole set's digest (``examples.digest`` in every fit's parameters)."""
        return hashlib.blake2b(json.dumps(self.fingerprint, sort_keys=True).encode(), digest_size=12).hexdigest()

    @property
    def params(self) -> dict:
        """A fit's parameters that say which example set it read: the files, how many users were added, the digest."""
        return {**{f"{role}.file": f["path"] for role, f in self.fingerprint["examples"].items()},
                "examples.added": len(self.added.rows), "examples.digest": self.digest}

    @property
    def delta_versions(self) -> dict[str, int]:
        """The Delta versions a fit on the set read: ``fue_example_users``'s, when users were added."""
        return {EXAMPLE_USERS.name: self.added.delta_version} if self.added.rows else {}

    @cached_property
    def by_role(self) -> dict[str, dict[str, list[str]]]:
        """The files' example users of each role (``positives``, ``negatives``) -> their writings
        (``profile.example_users()``), read from the cache when the same files were read before: parsing an eRisk
        archive takes a while, and every pseudo-training run and `examples add` starts from it. Keyed by the files'
        fingerprint, so an edited file is read again; the added users are not cached (read from their table)."""
        files = {k: self.fingerprint[k] for k in ("examples", "version")}
        key = hashlib.blake2b(json.dumps(files, sort_keys=True).encode(), digest_size=12).hexdigest()
        return cached(self.cache_dir, f"example-users-by-role-{key}.joblib", self.profile.example_users)

    def roles(self) -> dict[str, str]:
        """Every example user's name -> its role (``positives`` or ``negatives``): the files' and the added ones."""
        named = {user: role for role, found in self.by_role.items() for user in found}
        named.update({r["user"]: "positives" if r["label"] else "negatives" for r in self.added.rows})
        return named

    @cached_property
    def users(self) -> tuple[list[list[str]], list[int]]:
        """Per-user writings and labels (1 = positive): the files' users (``profile.training_set()``), then the added
        ones in the order added."""
        histories, labels = self.profile.training_set(self.by_role)
        return ([*histories, *(r["writings"] for r in self.added.rows)],
                [*labels, *(r["label"] for r in self.added.rows)])

    def whole_users(self) -> tuple[list[str], list[int]]:
        """One whole-user document per example user (section IV-F) and the labels: what the reference classifier and
        each pseudo-trained refresh are fitted on."""
        histories, labels = self.users
        return whole_user_documents(histories), labels


def cached(cache_dir: Path, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, kept in ``cache_dir/fue/<name>`` and read from there by the next call with that name (a name says
    what the value depends on). Written whole: two fits at once (a DAG run, `examples add`) never read half a file."""
    import joblib

    cache = Path(cache_dir) / "fue" / name
    if cache.exists():
        return joblib.load(cache)
    value = compute()
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(f".{os.getpid()}.tmp")
    joblib.dump(value, partial)
    partial.replace(cache)
    return value


def example_set(project, cfg) -> ExampleSet:
    """``project``'s example set: the users of its ``[profile] positives/negatives`` files plus those `focuscrawl
    examples add` added to it. It is the "original training set" of seed 000 (*Real-time focused extraction of
    social media users*), section V: "a new prediction classifier is built from the original training set plus the
    new pseudo-examples", the set the reference classifier was trained on, so every pseudo-trained refresh learns the
    project's own focus, as its reference and candidate classifiers do."""
    p = project.profile
    if p.positives is None:
        raise ValueError("profile: a query-driven profile has no example users to train on; "
                         "give positives and negatives files (the FUE loop needs its classifiers)")
    files = {}
    for role in ("positives", "negatives"):
        path = Path(getattr(p, role))
        stat = path.stat()
        files[role] = {"path": str(path), "size": stat.st_size, "mtime": stat.st_mtime, "format": p.example_format(role)}
    added = added_users(cfg, project.name)
    return ExampleSet(p, added, {"examples": files, "version": 1,
                                 **({"added": {"users": len(added.rows), "digest": added.digest()}} if added.rows
                                    else {})}, Path(cfg.var_dir))


__all__ = ["EXAMPLE_USERS", "AddedUsers", "ExampleSet", "added_users", "cached", "example_set"]
