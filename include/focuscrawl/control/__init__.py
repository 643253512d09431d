"""Steering a running crawl without a restart: pause and resume a loop, change its budget, add seeds, and name the
FUE classifier in use.

A command is one record on the compacted control topic (:data:`CONTROL_TOPIC`): the key says what it sets
(``paused/<loop>``, ``budget/<loop>/<knob>``, ``seed/<loop>/<url>``, ``classifier/fue/<project>/<role>``), the value
is the setting, so
compaction keeps the current control state and nothing else. Every fetching process follows the topic from
its beginning, as the crawlers follow pushed priorities (:mod:`focuscrawl.topics.priority`): a process that
starts or restarts later applies the state as it stands, and a command reaches a running process within a
poll (half a second). Each command also goes, whole, to :data:`AUDIT_TOPIC`, which the ``control_audit``
sink lands in Delta: who asked for what, when (docs/running.md, "Steering a running crawl").
"""

from __future__ import annotations

import getpass
import json
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import pyarrow as pa

from focuscrawl.core.records import json_object
from focuscrawl.lake.delta_sink import LINEAGE_COLUMNS
from focuscrawl.lake.tables import Column, table
from focuscrawl.topics.priority import PriorityFollower

log = logging.getLogger(__name__)

CONTROL_TOPIC = "focuscrawl.control"
AUDIT_TOPIC = "focuscrawl.control_audit"

LOOPS = ("fue", "sources", "revisits", "graph")
# The budgets a running loop takes, each its project-file key under [loops.<loop>].
BUDGETS = {"fue": ("users_per_hour",), "sources": ("fetches_per_second",),
           "revisits": ("fetches_per_second",), "graph": ("fetches_per_second",)}
# Loops whose running process takes new seed pages (the revisitor's known pages). The sources loop's
# seeds are site roots whose feeds and sitemaps fix the set of sources the budget is split over when
# the crawler starts, so a new one takes effect with the next `focuscrawl up`.
SEEDED = ("revisits",)
# The classifiers a running loop loads anew when a command names a new version: the FUE reference and candidate
# classifiers, by their model store names (``<project>/reference``), after `focuscrawl examples add` refitted them
# or `focuscrawl models promote` rolled one back.
CLASSIFIED = {"fue": ("reference", "candidate")}
ACTIONS = ("pause", "resume", "budget", "seed", "examples", "promote")

AUDIT_TABLE = table(
    "control_audit",
    "Every steering command given to the running platform (focuscrawl pause/resume/budget/seeds add, examples add, "
    "and a FUE classifier's models promote), once per command as sent to the control topic; the topic itself holds "
    "only the current state.",
    [
        Column("at_ms", pa.int64(), "when the command was given, Unix epoch milliseconds", nullable=False),
        Column("by", pa.string(), "who gave it: the operating-system user of the command line, or the Airflow user "
                                  "of the focuscrawl view", nullable=False),
        Column("action", pa.string(), "pause, resume, budget, seed, examples (example users added, the classifier "
                                      "refitted) or promote (a classifier rolled back)", nullable=False),
        Column("loop", pa.string(), "the loop it steers: fue, sources, revisits or graph", nullable=False),
        Column("knob", pa.string(), "the budget changed (budget), e.g. fetches_per_second; the classifier "
                                    "(examples, promote), e.g. demo/reference"),
        Column("value", pa.string(), "the new budget, the seed URL, or the classifier's version in the FUE model "
                                     "store, as given"),
        Column("control_key", pa.string(), "the key the command set on the control topic", nullable=False),
        *LINEAGE_COLUMNS,
    ],
)


class ControlError(ValueError):
    """A command no running loop can take; the message names the fix."""


@dataclass(frozen=True)
class Command:
    """One steering command. ``knob`` and ``value``: the budget's name and new value (``budget``), the seed
    URL (``seed``), the classifier's model store name and the version to use (``examples``, ``promote``)."""

    action: str
    loop: str
    knob: str | None = None
    value: float | str | None = None

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ControlError(f"unknown action {self.action!r}; one of {', '.join(ACTIONS)}")
        if self.loop not in LOOPS:
            raise ControlError(f"unknown loop {self.loop!r}; one of {', '.join(LOOPS)}")
        if self.action == "budget":
            if self.knob not in BUDGETS[self.loop]:
                raise ControlError(f"loop {self.loop} has no budget {self.knob!r}; its budget: "
                                   f"{', '.join(BUDGETS[self.loop])}")
            if not isinstance(self.value, (int, float)) or not math.isfinite(self.value) or self.value <= 0:
                raise ControlError(f"{self.loop} {self.knob} must be a number > 0, got {self.value!r}")
        if self.action == "seed":
            if self.loop not in SEEDED:
                raise ControlError(f"loop {self.loop} takes no seeds while it runs (its sources are fixed when the "
                                   f"crawler starts): add them to [loops.{self.loop}] seeds and run `focuscrawl up` "
                                   f"again; running loops that take seeds: {', '.join(SEEDED)}")
            if not isinstance(self.value, str) or not self.value.startswith(("http://", "https://")):
                raise ControlError(f"a seed is an http(s) URL, got {self.value!r}")
        if self.action in ("examples", "promote"):
            roles = CLASSIFIED.get(self.loop, ())
            project, _, role = (self.knob or "").rpartition("/")
            if not project or role not in roles:
                raise ControlError(f"loop {self.loop} loads no classifier {self.knob!r} while it runs; classifiers "
                                   "followed live: " + ", ".join(f"<project>/{r} ({loop})" for loop, rs in
                                                                 CLASSIFIED.items() for r in rs))
            if isinstance(self.value, bool) or not isinstance(self.value, int) or self.value < 1:
                raise ControlError(f"a classifier's version is a model store version >= 1, got {self.value!r}")

    @property
    def key(self) -> str:
        if self.action in ("pause", "resume"):
            return f"paused/{self.loop}"
        if self.action == "budget":
            return f"budget/{self.loop}/{self.knob}"
        if self.action in ("examples", "promote"):
            return classifier_key(self.loop, self.knob)
        return f"seed/{self.loop}/{self.value}"

    def state(self) -> dict[str, Any]:
        """The control topic's value for :attr:`key`."""
        if self.action in ("pause", "resume"):
            return {"paused": self.action == "pause"}
        return {"value": self.value}

    def audit_row(self, by: str, at_ms: int) -> dict[str, Any]:
        return {"at_ms": at_ms, "by": by, "action": self.action, "loop": self.loop, "knob": self.knob,
                "value": None if self.value is None else str(self.value), "control_key": self.key}


def send(bootstrap: str, commands: Iterable[Command], by: str | None = None, topic: str = CONTROL_TOPIC,
         audit_topic: str = AUDIT_TOPIC) -> int:
    """Send each command to the control ``topic`` (the state) and the audit topic (the record); returns how
    many. The control topic is compacted and both are made here when missing (the one topic factory). Raises
    ``ConnectionError`` at once when nothing listens at ``bootstrap`` (the client would retry for half a minute)."""
    from kafka import KafkaProducer

    from focuscrawl.services.process import port_open
    from focuscrawl.topics.specs import TopicSpec, ensure_topics

    host, _, port = bootstrap.split(",")[0].rpartition(":")
    if not port_open(host.strip("[]"), int(port)):
        raise ConnectionError(f"nothing listens at {bootstrap}")

    ensure_topics(bootstrap, [TopicSpec(topic, "what a command sets", compacted=True),
                              TopicSpec(audit_topic, "the loop steered")])
    by = by or getpass.getuser()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    sent = 0
    try:
        for command in commands:
            at_ms = int(time.time() * 1000)
            producer.send(topic, key=command.key.encode(), value=json.dumps(command.state()).encode())
            producer.send(audit_topic, key=command.loop.encode(),
                          value=json.dumps(command.audit_row(by, at_ms)).encode())
            sent += 1
        producer.flush(timeout=60)
    finally:
        producer.close()
    return sent


def classifier_key(loop: str, model: str) -> str:
    """The control key naming the version of classifier ``model`` (its model store name) a running ``loop`` uses."""
    return f"classifier/{loop}/{model}"


def classifier_version(key: str, value: dict | None, loop: str, model: str) -> int | None:
    """The version of ``model`` a control record names for ``loop``; None for a record about anything else (or a
    deleted key: the process keeps the classifier it has)."""
    if key != classifier_key(loop, model) or value is None:
        return None
    return int(value["value"])


class ControlState:
    """One loop's control state as the control topic holds it (thread-safe: the follower's thread applies,
    the process's loop reads). Seeds added since the last :meth:`new_seeds` wait there for the process's own
    thread, which alone touches its frontier."""

    def __init__(self, loop: str, budgets: dict[str, float | None] | None = None) -> None:
        if loop not in LOOPS:
            raise ControlError(f"unknown loop {loop!r}; one of {', '.join(LOOPS)}")
        self.loop = loop
        self._defaults = dict(budgets or {})
        self._lock = threading.Lock()
        self._paused = False
        self._budgets: dict[str, float] = {}
        self._seeds: list[str] = []
        self._seen_seeds: set[str] = set()
        self.applied = 0
        self.on_change: Callable[[], None] | None = None

    def apply(self, key: str, value: dict | None) -> None:
        """A control record (``value`` None: its key was deleted); records of other loops are skipped."""
        kind, _, rest = key.partition("/")
        loop, _, name = rest.partition("/")
        if loop != self.loop:
            return
        with self._lock:
            if kind == "paused":
                self._paused = bool(value and value.get("paused"))
            elif kind == "budget" and name in BUDGETS[self.loop]:
                if value is None:
                    self._budgets.pop(name, None)
                else:
                    self._budgets[name] = float(value["value"])
            elif kind == "seed" and value is not None and name not in self._seen_seeds:
                self._seen_seeds.add(name)
                self._seeds.append(name)
            elif kind == "classifier":  # the classifier's own followers take it (classifier_version)
                return
            else:
                log.warning("ignoring control record %r for loop %s", key, self.loop)
                return
            self.applied += 1
        if self.on_change is not None:
            self.on_change()

    @property
    def paused(self) -> bool:
        with self._lock:
            return self._paused

    def budget(self, knob: str) -> float | None:
        """The budget ``knob`` now: the last command's, else the project file's (given at construction; None:
        the process has none of its own)."""
        with self._lock:
            return self._budgets.get(knob, self._defaults.get(knob))

    def new_seeds(self) -> list[str]:
        """Seeds added since the last call (each once)."""
        with self._lock:
            seeds, self._seeds = self._seeds, []
            return seeds

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {"loop": self.loop, "paused": self._paused,
                    "budgets": {**self._defaults, **self._budgets},
                    "seeds_added": len(self._seen_seeds), "commands_applied": self.applied}


class ControlFollower(PriorityFollower):
    """A :class:`~focuscrawl.topics.priority.PriorityFollower` of the control topic: it hands over each record's
    JSON object (None: a deleted key) instead of a score."""

    def _apply(self, rec) -> None:
        try:
            self.apply(rec.key.decode(), None if rec.value is None else json_object(rec.value, "control"))
        except (AttributeError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring malformed control record %s@%d key=%r: %s", self.topic, rec.offset, rec.key, exc)


def commanded(bootstrap: str, timeout_s: float = 10.0, topic: str = CONTROL_TOPIC) -> dict[str, dict[str, Any]]:
    """The control state the topic holds now, per loop (:meth:`ControlState.status` without project-file
    defaults: what the commands set), read from its beginning to its end as a starting process reads it.
    Raises ``TimeoutError`` when the topic's end is not reached within ``timeout_s`` (Kafka down)."""
    states = {loop: ControlState(loop) for loop in LOOPS}

    def apply(key: str, value: dict | None) -> None:
        loop = key.partition("/")[2].partition("/")[0]
        if loop in states:
            states[loop].apply(key, value)

    follower = ControlFollower(bootstrap, topic, apply, poll_ms=200)
    follower.start()
    try:
        if not follower.caught_up.wait(timeout_s):
            raise TimeoutError(f"control topic {topic} at {bootstrap} not read within {timeout_s:.0f}s")
    finally:
        follower.stop()
        follower.join(5)
    return {loop: {k: v for k, v in state.status().items() if k in ("paused", "budgets", "seeds_added")}
            for loop, state in states.items()}


__all__ = ["ACTIONS", "AUDIT_TABLE", "AUDIT_TOPIC", "BUDGETS", "CLASSIFIED", "CONTROL_TOPIC", "Command", "ControlError",
           "ControlFollower", "ControlState", "LOOPS", "SEEDED", "classifier_key", "classifier_version", "commanded",
           "send"]
