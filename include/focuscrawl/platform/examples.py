"""``focuscrawl examples add users FILE [--label positive|negative]``: a live change of a project's example users.

Seed 000 (*Real-time focused extraction of social media users*, section V) builds the reference and candidate
classifiers once, from the training set, and never changes them: a refit on the same example users would be a copy
of the same model. What does make new versions is a change of the training set, and this command is that change,
made while the crawl runs:

1. FILE is read by the project's own example readers (:func:`focuscrawl.project.examples.read_examples`: eRisk XML,
   JSONL, CSV, as ``[profile] positives/negatives``), and refused, naming the fix, when it is malformed or empty,
   when one of its users is already an example user, or when the project has no example users (query-driven).
2. Its users are appended to the Delta table ``fue_example_users`` (:data:`focuscrawl.fue.examples.EXAMPLE_USERS`, in
   the lake, under ``$FOCUSCRAWL_VAR/lake`` by default), never to the user's project file. The project's example set
   is its files' users plus its rows there (:func:`focuscrawl.fue.examples.example_set`): every fit reads both
   (:func:`focuscrawl.platform.train.train_models`, so a later `focuscrawl up` or `train` uses the changed set and
   says so, and the next pseudo-trained refresh of ``fue_pseudo_training``).
3. The reference and candidate classifiers are refitted by that one fit path, `focuscrawl train`'s: stored as new
   versions in the FUE model store (the newest fit is the champion) with their cross-validated AUC, the count of
   example users of each class, the set's digest and the Delta version of ``fue_example_users`` they read; copied
   where the processes load them.
4. Each new champion is named on the control topic (``classifier/fue/<project>/<role>``, a
   :class:`~focuscrawl.control.Command` ``examples``), which the FUE classifier process and the choosers follow
   (:class:`focuscrawl.fue.champion.ChampionFollower`): they use it within seconds, a chooser rescoring the
   candidates it holds. The same send lands the command in ``control_audit``.

The refit runs here, in the command, rather than in a DAG the command triggers: it is `focuscrawl train`'s fit of the
operator's own examples (seconds to a minute), whose outcome the operator wants to see at once (the held-out AUC, or
why the set cannot be trained on), and the processes can be told only once it is stored; a DAG would add a
scheduler's wait and a second place to read the error. The ``model_registry`` DAG then records the new versions in
MLflow as it records every stored version.
"""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa

from focuscrawl.fue.examples import EXAMPLE_USERS, added_users, example_set

LABELS = {"positive": "positives", "negative": "negatives"}  # --label -> the [profile] key of that class


class ExamplesError(ValueError):
    """The example users cannot be added; the message names the fix."""


def read_users(path: str | Path, label: str, fmt: str | None = None) -> dict[str, list[str]]:
    """The users of ``path`` (``label`` positive or negative) -> their writings, read as a project's example file."""
    from focuscrawl.project.examples import infer_format, read_examples

    path = Path(path).expanduser()
    if label not in LABELS:
        raise ExamplesError(f"--label {label!r}: give positive or negative")
    if not path.exists():
        raise ExamplesError(f"{path} does not exist; point at a file of example users (eRisk XML, JSONL or CSV)")
    try:
        return read_examples(path, fmt or infer_format(path), LABELS[label])
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise ExamplesError(f"{path}: {exc}; a file of example users holds each user with their writings, as "
                            "[profile] positives does: {\"user\": ..., \"text\": ...} per JSONL line, a CSV with "
                            "user and text columns, or eRisk XML") from None


def add_examples(project, cfg, path: str | Path, label: str = "positive", *, fmt: str | None = None,
                 by: str | None = None, log=print) -> dict:
    """Add the users of ``path`` to ``project``'s example set as ``label`` examples, refit its reference and candidate
    classifiers and name the new champions on the control topic (this module's steps 1-4). Returns what it did;
    raises :class:`ExamplesError` naming the fix."""
    import getpass

    from deltalake import write_deltalake

    from focuscrawl import control
    from focuscrawl.fue.batch import model_store
    from focuscrawl.lake import ensure_table, open_table
    from focuscrawl.lake.storage import storage_options
    from focuscrawl.platform.train import ROLES, train_models

    if project.profile.positives is None:
        raise ExamplesError(f"project {project.name} has no example users to add to: its profile is query-driven "
                            "(profile.query); give [profile] positives and negatives files of example users and run "
                            "`focuscrawl up` again")
    users = read_users(path, label, fmt)
    known = example_set(project, cfg).roles()  # the files' users from the cache train_models reads them from next
    clash = sorted(set(users) & set(known))
    if clash:
        listed = ", ".join(f"{u} ({known[u]})" for u in clash[:5]) + (f" and {len(clash) - 5} more" if len(clash) > 5
                                                                      else "")
        raise ExamplesError(f"{listed}: already example user(s) of project {project.name}; remove them from {path} "
                            "(a user's class is changed in the project's own example files, then `focuscrawl train "
                            "--force`)")

    uri, options = EXAMPLE_USERS.path(cfg), storage_options(cfg) or None
    ensure_table(uri, EXAMPLE_USERS, options)
    at_ms, by = int(time.time() * 1000), by or getpass.getuser()
    rows = [{"project": project.name, "user": user, "label": int(label == "positive"), "writings": writings,
             "source": str(Path(path).expanduser().resolve()), "added_at_ms": at_ms, "by": by}
            for user, writings in users.items()]
    write_deltalake(uri, pa.Table.from_pylist(rows, schema=EXAMPLE_USERS.arrow_schema()), mode="append",
                    storage_options=options)
    try:
        train_models(project, cfg, log=log)
    except ValueError as exc:  # the set cannot be fitted: it is not changed
        open_table(uri, options).delete(f"project = '{project.name}' AND added_at_ms = {at_ms}")
        raise ExamplesError(f"{exc}; the users of {path} were not added") from None

    store = model_store(cfg)
    versions = {role: store.champion(f"{project.name}/{role}").version for role in ROLES}
    commands = [control.Command("examples", "fue", f"{project.name}/{role}", v) for role, v in versions.items()]
    try:
        control.send(cfg.kafka_bootstrap, commands, by=by)
    except Exception as exc:  # noqa: BLE001 - the broker is down: the fit stands, the processes were not told
        raise ExamplesError(f"the classifiers were refitted ({', '.join(f'{r} v{v}' for r, v in versions.items())}) "
                            f"but the running processes were not told: cannot reach Kafka at {cfg.kafka_bootstrap} "
                            f"({type(exc).__name__}: {exc}); they load them at their next start (`focuscrawl "
                            "services up --only kafka` brings the broker back)") from None
    return {"project": project.name, "label": label, "added": sorted(users), "versions": versions,
            "fue_example_users": added_users(cfg, project.name).delta_version}


def examples_command(cfg, path: str | Path, label: str, fmt: str | None = None, by: str | None = None,
                     log=print) -> dict:
    """`focuscrawl examples add users`: :func:`add_examples` on the project the running platform crawls."""
    from focuscrawl.orchestration.schedules import running_project
    from focuscrawl.platform.supervisor import supervisor_pid

    if supervisor_pid(cfg.var_dir) is None:
        raise ExamplesError(f"no platform is running out of {cfg.var_dir}: `focuscrawl up PROJECT` first (to change "
                            "the example users of a crawl that is not running, edit its [profile] positives and "
                            "negatives files; `focuscrawl up` refits on them)")
    project = running_project(cfg)
    if project is None:
        raise ExamplesError("no project is active here; `focuscrawl up PROJECT` first")
    return add_examples(project, cfg, path, label, fmt=fmt, by=by, log=log)


__all__ = ["LABELS", "ExamplesError", "add_examples", "examples_command", "read_users"]
