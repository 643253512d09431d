"""The one scaffold of every stream process: arguments, logging, signals, Kafka, status, metrics.

docs/architecture.md, "Three loops" (loop 1, stream). A process under ``streaming/``
keeps only what is about its site or its stage; everything else is here, the same for all::

    cfg = settings()
    ap = parser("crawler-listing", __doc__, cfg)     # --bootstrap --status-file --metrics-port --log-level
    ap.add_argument("--base-url", default=cfg.world_url)
    args = ap.parse_args(argv)
    with StreamProcess("crawler-listing", args, cfg) as proc:
        proc.ensure_topics([TopicSpec(POSTS_TOPIC, "author")])   # waits for the broker
        fetcher = proc.fetcher()   # the --fetch-spec site's, counted, closed at exit
        proc.follow(USER_PRIORITIES_TOPIC, crawler.apply_priority)  # a PriorityFollower, stopped at exit
        proc.status(crawler.status)                             # written every second and at exit
        while proc.running():
            ...; proc.send(POSTS_TOPIC, author, value); proc.flush()
            proc.wait(0.25)
    # or, for a consumer-group stage:  proc.run_stage([topic], group, handle, idle=...)

What it guarantees:

- SIGTERM and SIGINT set :attr:`StreamProcess.stopping`; the ``with`` block ends cleanly (followers
  stopped, the producer flushed and closed, fetchers closed, a last status written).
- One idempotent producer per process (``acks=all``, ``enable_idempotence``): the broker drops the
  duplicates of its own retries.
- :meth:`StreamProcess.run_stage`: a consumer-group member whose outputs and input offsets commit in one
  Kafka transaction (:class:`focuscrawl.topics.changelog.TransactionalStage` without state), so a crash
  anywhere leaves an aborted batch that ``read_committed`` readers never see, and the batch is handled
  again: exactly once. A broker error rejoins from the committed offsets instead of skipping.
- ``--status-file`` (JSON, :func:`focuscrawl.core.status_file.write_status`, atomic): the process's own figures,
  plus ``process``, ``pid``, ``started_at_ms``, ``updated_at_ms`` and ``metrics`` (the same numbers as
  the endpoint, :meth:`focuscrawl.stream.metrics.Metrics.snapshot`).
- ``--metrics-port N`` (0: off): Prometheus text on ``<FOCUSCRAWL_BIND_HOST>:N/metrics`` (127.0.0.1 by
  default; 0.0.0.0 in docker-compose, where Prometheus scrapes across containers; :mod:`focuscrawl.stream.metrics`);
  the consumer lag of every assigned partition is refreshed with each status write.

Kafka is imported only when a process uses it (the domain package imports no engine at module level).
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from focuscrawl.config import Settings
from focuscrawl.control import CONTROL_TOPIC
from focuscrawl.stream.metrics import Metrics
from focuscrawl.core.status_file import write_status
from focuscrawl.topics.specs import TopicSpec, ensure_topics

log = logging.getLogger("focuscrawl.stream.process")

Output = tuple[str, str, bytes]  # (topic, key, value) a stage publishes

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class Stopped(Exception):
    """Raised inside the ``with`` block when a stop signal arrived while waiting (e.g. for the broker)."""


class StreamArgumentParser(argparse.ArgumentParser):
    """Parses the common arguments; with ``--fetch-spec`` it reads the spec right away (a bad file exits 2
    with the error naming the field, before anything starts) and defaults ``--base-url`` to its site's URL."""

    cfg: Settings

    def parse_args(self, args=None, namespace=None):  # noqa: D401 - argparse's name
        ns = super().parse_args(args, namespace)
        spec_file = getattr(ns, "fetch_spec", None)
        ns.fetch_spec = ns.project_site = None
        if spec_file is not None:
            from focuscrawl.stream.spec import FetchSpec

            try:
                ns.fetch_spec = FetchSpec.read(spec_file)
            except ValueError as exc:
                self.error(str(exc))
            ns.project_site = ns.fetch_spec.site
            if hasattr(ns, "base_url") and ns.base_url == self.get_default("base_url"):
                ns.base_url = ns.project_site.url(self.cfg)
        return ns


def add_common_args(ap: argparse.ArgumentParser, name: str, cfg: Settings) -> argparse.ArgumentParser:
    """The arguments every stream process takes (BOARD interface: ``--status-file``, ``--metrics-port``,
    ``--fetch-spec FILE`` for the processes that fetch, the WARC arguments)."""
    g = ap.add_argument_group("stream process")
    g.add_argument("--bootstrap", default=cfg.kafka_bootstrap, help="Kafka bootstrap servers")
    g.add_argument("--status-file", type=Path, default=cfg.var_dir / "status" / f"{name}.json",
                   help="JSON status, rewritten atomically every --status-every seconds")
    g.add_argument("--status-every", type=float, default=1.0, help="seconds between status writes")
    g.add_argument("--metrics-port", type=int, default=0,
                   help="serve Prometheus metrics on FOCUSCRAWL_BIND_HOST (127.0.0.1):PORT/metrics (0: off)")
    g.add_argument("--control-topic", default=CONTROL_TOPIC,
                   help="compacted topic of steering commands (focuscrawl pause/resume/budget/seeds) the process follows")
    g.add_argument("--log-level", default="INFO", type=str.upper,
                   choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    g.add_argument("--fetch-spec", type=Path, help="the resolved site and pace of this process "
                   "(focuscrawl.stream.spec.FetchSpec, written by the platform's plan): User-Agent, politeness, "
                   "robots, OAuth apply")
    from focuscrawl.fetch.warc import add_warc_arguments

    add_warc_arguments(g)
    return ap


def parser(name: str, doc: str | None, cfg: Settings) -> argparse.ArgumentParser:
    """An argument parser titled by the first line of ``doc``, with :func:`add_common_args`."""
    ap = StreamArgumentParser(prog=name, description=(doc or name).strip().splitlines()[0])
    ap.cfg = cfg
    return add_common_args(ap, name, cfg)


def setup_logging(level: str = "INFO") -> None:
    """One log format for every process, with secrets redacted before any handler sees them
    (no secret in a log; :mod:`focuscrawl.core.redact`)."""
    from focuscrawl.core import redact

    logging.basicConfig(level=getattr(logging, level, logging.INFO), format=LOG_FORMAT)
    redact.install()


class StreamProcess:
    """A running stream process; use as a context manager (see the module docstring)."""

    def __init__(self, name: str, args: argparse.Namespace, cfg: Settings, install_signals: bool = True) -> None:
        self.name, self.args, self.cfg = name, args, cfg
        self.bootstrap: str = getattr(args, "bootstrap", cfg.kafka_bootstrap)
        self.status_file: Path | None = getattr(args, "status_file", None)
        self.status_every: float = getattr(args, "status_every", 1.0)
        self.metrics_port: int = getattr(args, "metrics_port", 0) or 0
        self.stopping = threading.Event()
        self.metrics = Metrics(name)
        self.started_at = time.time()
        self._install_signals = install_signals
        self._status_fns: list[Callable[[], dict]] = []
        self._last_status = 0.0
        self._exit = contextlib.ExitStack()
        self._producer = None
        self._consumers: list[tuple[Any, str]] = []  # (KafkaConsumer, group) whose lag is reported
        self._http = None
        self._archive = None
        self._dead_letter_topic = False  # created on the first dead letter
        self._control = None  # the loop's steering state, once :meth:`control` follows it
        self._pushes = None  # the last pushes applied (focuscrawl.stream.pushes), once a feedback topic is followed

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> "StreamProcess":
        setup_logging(getattr(self.args, "log_level", "INFO"))
        if self._install_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._on_signal)
            faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 PID`: every thread's stack
        if self.metrics_port:
            self._http = self._serve_metrics(self.metrics_port)
        log.info("%s (pid %d): status %s, metrics %s, Kafka %s", self.name, os.getpid(), self.status_file,
                 f"http://{self.cfg.bind_host}:{self.metrics_port}/metrics" if self.metrics_port else "off",
                 self.bootstrap)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.stopping.set()
        try:
            self._exit.close()  # followers, producer, fetchers, consumers: last opened, first closed
        finally:
            self.write_status()
            if self._http is not None:
                self._http[0].shutdown()
                self._http[0].server_close()
            log.info("%s stopped", self.name)
        return exc_type is Stopped

    def _on_signal(self, signum, _frame) -> None:
        # Not Event.set() here: the handler runs in the main thread, which may hold the event's lock
        # (inside stopping.wait) at that instant; a helper thread sets it once the lock is free.
        threading.Thread(target=self._stop_by_signal, args=(signum,), daemon=True).start()

    def _stop_by_signal(self, signum: int) -> None:
        log.info("%s: signal %d, stopping", self.name, signum)
        self.stopping.set()

    def _serve_metrics(self, port: int):
        from prometheus_client import start_http_server

        try:
            return start_http_server(port, addr=self.cfg.bind_host, registry=self.metrics.registry)
        except OSError as exc:
            raise SystemExit(f"{self.name}: cannot serve metrics on {self.cfg.bind_host}:{port} ({exc}); "
                             "give another --metrics-port, or 0 to turn the endpoint off") from None

    def on_exit(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` when the process stops (in reverse order of registration)."""
        self._exit.callback(fn)

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` unless a stop arrives; True when stopping."""
        return self.stopping.wait(max(0.0, seconds))

    def running(self) -> bool:
        """Write the status when due; False once a stop arrived (the loop condition of a process)."""
        self.tick()
        return not self.stopping.is_set()

    # -- status and metrics ----------------------------------------------------------------

    def status(self, fn: Callable[[], dict]) -> None:
        """Add a provider of status figures (merged, in order, into every status write)."""
        self._status_fns.append(fn)

    def status_due_in(self) -> float:
        """Seconds until :meth:`running` writes the next status (0: at the next call)."""
        return max(0.0, self._last_status + self.status_every - time.monotonic())

    def tick(self) -> None:
        if time.monotonic() - self._last_status >= self.status_every:
            self.write_status()

    def write_status(self) -> dict:
        """Refresh the consumer lag, then write the status file (if any); returns what was written."""
        self._last_status = time.monotonic()
        self._refresh_lag()
        status: dict = {}
        for fn in self._status_fns:
            try:
                status.update(fn())
            except Exception:  # noqa: BLE001 - a status provider must not end the process
                log.exception("status provider failed")
        status.update(process=self.name, pid=os.getpid(), started_at_ms=int(self.started_at * 1000),
                      updated_at_ms=int(time.time() * 1000), metrics=self.metrics.snapshot())
        if self.status_file is not None:
            write_status(self.status_file, status)
        return status

    def _refresh_lag(self) -> None:
        for consumer, group in self._consumers:
            try:
                assigned = list(consumer.assignment())
                if not assigned:
                    continue
                ends = consumer.end_offsets(assigned)
                for tp in assigned:
                    lag = max(0, ends[tp] - consumer.position(tp, timeout_ms=1000))
                    self.metrics.consumer_lag.labels(group, tp.topic, str(tp.partition)).set(lag)
            except Exception as exc:  # noqa: BLE001 - lag is a figure, not a reason to stop
                log.debug("consumer lag of %s not readable: %s", group, exc)

    def watch_lag(self, consumer, group: str) -> None:
        """Report ``consumer``'s lag per assigned partition as ``focuscrawl_consumer_lag``."""
        self._consumers.append((consumer, group))

    def unwatch_lag(self, consumer) -> None:
        self._consumers = [(c, g) for c, g in self._consumers if c is not consumer]

    # -- Kafka -----------------------------------------------------------------------------

    def until_kafka(self, fn: Callable[[], Any], what: str, every: float = 5.0):
        """``fn()``, retried while the broker is unreachable; raises :class:`Stopped` on a stop signal."""
        from kafka.errors import KafkaError

        while True:
            try:
                return fn()
            except KafkaError as exc:
                log.warning("%s: Kafka at %s not reachable (%s); retrying in %.0f s", what, self.bootstrap, exc, every)
                if self.wait(every):
                    raise Stopped() from None

    def ensure_topics(self, specs: list[TopicSpec]) -> list[str]:
        """Create missing topics with the settings' partitions and replication (:func:`focuscrawl.topics.specs.ensure_topics`)."""
        return self.until_kafka(lambda: ensure_topics(self.bootstrap, specs, cfg=self.cfg), "creating topics")

    @property
    def producer(self):
        """The process's idempotent producer (``acks=all``), made on first use, flushed and closed at exit."""
        if self._producer is None:
            from kafka import KafkaProducer

            self._producer = self.until_kafka(lambda: KafkaProducer(
                bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True, linger_ms=20,
                client_id=f"focuscrawl-{self.name}"), "connecting the producer")

            def close(p=self._producer) -> None:
                try:
                    p.flush(timeout=30)
                finally:
                    p.close(timeout=10)

            self.on_exit(close)
        return self._producer

    def send(self, topic: str, key: str | bytes | None, value: bytes | None) -> None:
        """Send one record through :attr:`producer` (counted in ``focuscrawl_records_produced_total``)."""
        if isinstance(key, str):
            key = key.encode()
        self.producer.send(topic, key=key, value=value)
        self.metrics.produced.labels(topic).inc()

    def flush(self, timeout: float = 30) -> None:
        if self._producer is not None:
            self._producer.flush(timeout=timeout)

    def follow(self, topic: str, apply: Callable[[str, Any], None], follower_cls=None):
        """Start a follower of a compacted feedback topic (default :class:`~focuscrawl.topics.priority.PriorityFollower`);
        every record applied is counted in ``focuscrawl_pushed_scores_applied_total`` and timed
        (:meth:`push_applied`); stopped at exit."""
        from focuscrawl.topics.priority import PriorityFollower

        counter = self.metrics.pushes.labels(topic)

        def counted(key: str, value) -> None:
            apply(key, value)
            counter.inc()

        follower = (follower_cls or PriorityFollower)(
            self.bootstrap, topic, counted, on_applied=lambda rec: self.push_applied(rec.topic, rec.timestamp))
        follower.start()

        def stop() -> None:
            follower.stop()
            follower.join(timeout=10)

        self.on_exit(stop)
        return follower

    def push_applied(self, topic: str, record_ms: int | None) -> None:
        """One pushed record of ``topic`` (its Kafka timestamp, epoch ms) applied now: observed in
        ``focuscrawl_push_apply_lag_seconds`` and folded into the last pushes applied, which the status document
        holds as ``applied_pushes`` (:class:`focuscrawl.stream.pushes.AppliedPushes`). A stage that reads a
        feedback topic itself (the FUE chooser) calls it for each score it applies."""
        if self._pushes is None:
            from focuscrawl.stream.pushes import AppliedPushes

            self._pushes = AppliedPushes()
            self.status(self._pushes.status)
        lag = self._pushes.applied(topic, record_ms)
        if lag is not None:
            self.metrics.push_apply_lag.labels(topic).observe(lag)

    def control(self, loop: str, *, paced=None, **budgets: float | None):
        """Follow the control topic for ``loop`` (:mod:`focuscrawl.control`: pause, budgets, new seeds) and
        report it in the status file as ``control``. ``budgets``: the project file's values, in force until a
        command changes them. ``paced``: a fetcher whose per-host pace is the loop's ``fetches_per_second``
        (its delay now is the default; each budget command sets it anew). Returns the
        :class:`~focuscrawl.control.ControlState` the process's loop reads."""
        from focuscrawl.control import ControlFollower, ControlState

        if paced is not None:
            delay = paced.politeness.min_delay
            budgets.setdefault("fetches_per_second", 1.0 / delay if delay > 0 else None)
        self._control = ControlState(loop, budgets)
        if paced is not None:
            def repace() -> None:  # on the follower's thread; the fetcher reads the delay before each request
                fps = self._control.budget("fetches_per_second")
                if fps:
                    paced.politeness.min_delay = 1.0 / fps

            self._control.on_change = repace
        topic = getattr(self.args, "control_topic", CONTROL_TOPIC)
        follower = self.follow(topic, self._control.apply, follower_cls=ControlFollower)
        # A (re)started process applies the state as it stands before its first fetch (a paused loop stays paused).
        if not follower.caught_up.wait(timeout=60):
            log.warning("%s: %s not read to its end within 60 s; going on, commands apply as they arrive", self.name, topic)
        self.status(lambda: {"control": self._control.status()})
        return self._control

    def paused(self) -> bool:
        """True while the process's loop is paused (``focuscrawl pause LOOP``), after waiting half a second so
        the caller can go round its loop again; False once stopping, and for a process that follows no control.
        A stage (:meth:`run_stage`) of a paused loop pauses its partitions instead."""
        if self._control is None or not self._control.paused or self.stopping.is_set():
            return False
        self.wait(0.5)
        return True

    def revalidator(self, fetcher, loop: str):
        """``fetcher``'s conditional GETs (:class:`focuscrawl.fetch.conditional.Revalidator`), counted as ``loop``'s
        in the metrics; None when the ``--fetch-spec`` site says ``conditional_fetches = false``."""
        from focuscrawl.fetch.conditional import Revalidator

        site = getattr(self.args, "project_site", None)
        if site is not None and not site.conditional_fetches:
            return None
        return Revalidator(fetcher, on_outcome=self.metrics.revisit_outcome(loop))

    def fetcher(self, **kwargs):
        """The process's fetcher, counted in its metrics and closed at exit. With ``--fetch-spec``, its site's
        (:func:`focuscrawl.fetch.site.fetcher_for_site`: User-Agent, politeness, robots, rate-limit headers,
        OAuth) at the spec's pace; else ``Fetcher.from_settings``. With ``--warc DIR`` every fetch is archived
        (:attr:`archive`). ``kwargs`` go to the :class:`~focuscrawl.fetch.Fetcher`."""
        from focuscrawl.fetch import Fetcher

        kwargs.setdefault("observer", self.metrics.fetch_observer)
        kwargs.setdefault("archive", self.archive)
        spec = getattr(self.args, "fetch_spec", None)
        if spec is not None:
            from focuscrawl.fetch.site import fetcher_for_site

            fetcher = fetcher_for_site(spec.site, self.cfg, pace=spec.pace, **kwargs)
        else:
            fetcher = Fetcher.from_settings(self.cfg, **kwargs)
        self.on_exit(fetcher.close)
        return fetcher

    def dead_letter(self, rejection) -> None:
        """Send a :class:`~focuscrawl.parse.rejection.Rejection` to the dead-letter topic (through :meth:`send`;
        ``streaming/consumer.py --sink dead_letter`` lands it in the ``dead_letter`` table)."""
        from focuscrawl.crawl import dead_letters
        from focuscrawl.topics.specs import host_key

        if not self._dead_letter_topic:
            self.ensure_topics([TopicSpec(dead_letters.DEAD_LETTER_TOPIC, "host")])
            self._dead_letter_topic = True
        self.send(dead_letters.DEAD_LETTER_TOPIC, host_key(rejection.url),
                  dead_letters.encode(rejection.dead_letter(self.name)))

    def scope(self, report: Callable[[Any], None] | None = None, **kwargs):
        """The process's :class:`~focuscrawl.fetch.scope.Scope`: the ``--fetch-spec`` site's ``[sites.scope]`` rules
        (the defaults without a spec). Each refusal is counted in ``focuscrawl_scope_refused_total{reason}``
        and its rejection goes to ``report`` (default: the dead-letter topic through :meth:`send`, which
        ``streaming/consumer.py --sink dead_letter`` lands); ``kwargs`` go to ``Scope`` (``host_of``)."""
        from focuscrawl.fetch.scope import Scope, ScopeRules

        site = getattr(self.args, "project_site", None)
        rules = site.scope if site is not None else ScopeRules()
        report = report or self.dead_letter

        def refused(refusal) -> None:
            self.metrics.scope_refused.labels(refusal.reason).inc()
            report(refusal.rejection())

        log.info("scope: %s", rules.model_dump(exclude_defaults=False))
        return Scope(rules, on_refusal=refused, **kwargs)

    @property
    def archive(self):
        """The process's :class:`~focuscrawl.fetch.warc.WarcArchive` with ``--warc DIR`` (files named after
        the process and its pid, closed at exit), else None."""
        if self._archive is None:
            from focuscrawl.fetch.warc import archive_from_args

            self._archive = archive_from_args(self.args, self.name, self.cfg.user_agent)
            if self._archive is not None:
                self.on_exit(self._archive.close)  # after the fetchers that write to it (registered later)
        return self._archive

    def consumer(self, topics: list[str], group: str | None, **kwargs):
        """A kafka-python consumer (auto-commit off, read_committed, 10 s session: DEVELOPERS.md), lag-watched."""
        from kafka import KafkaConsumer

        # read_committed: records of an aborted producer transaction (a stage or sampler killed mid-round)
        # are never seen; harmless on topics written without transactions.
        opts = dict(bootstrap_servers=self.bootstrap, group_id=group, enable_auto_commit=False,
                    auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=3000,
                    isolation_level="read_committed", client_id=f"focuscrawl-{self.name}")
        opts.update(kwargs)
        consumer = self.until_kafka(lambda: KafkaConsumer(*topics, **opts), f"joining {group}")
        if group is not None:
            self.watch_lag(consumer, group)
        return consumer

    def run_stage(self, topics: list[str], group: str, handle: Callable[[Any], Iterable[Output]],
                  idle: Callable[[], Iterable[Output]] = lambda: (), poll_ms: int = 500,
                  max_records: int = 100, instance: str = "0", **consumer_options) -> None:
        """Consume ``topics`` as ``group``; publish what ``handle(record)`` and ``idle()`` return in one Kafka
        transaction with the inputs' offsets. Returns when stopping. A record whose handling raises is
        logged, counted (``focuscrawl_record_errors_total``) and skipped; a Kafka error rejoins the group;
        ``handle`` may raise :class:`Stopped` to leave its batch uncommitted. ``instance`` names this member
        of the group (stable across restarts, so the restarted process fences its killed self and aborts its
        open transaction at once). ``consumer_options`` go to the consumer."""
        from kafka.errors import KafkaError

        from focuscrawl.topics.changelog import TransactionalStage

        self.ensure_topics([TopicSpec(t, "the producer's key") for t in topics])
        stage = TransactionalStage(self.bootstrap, topics, group, _StatelessHandler(self, handle, idle),
                                   transactional_id=f"{group}-{instance}", keeps_state=False, poll_ms=poll_ms,
                                   max_records=max_records, paused=lambda: bool(self._control and self._control.paused),
                                   client_id=f"focuscrawl-{self.name}", **consumer_options)
        watched: list = []

        def watch(consumer) -> None:
            watched.append(consumer)
            self.watch_lag(consumer, group)

        while not self.stopping.is_set():
            try:
                stage.run(self.stopping, on_batch=self.tick, on_consumer=watch)
            except KafkaError as exc:
                log.warning("%s: Kafka error (%s); rejoining %s from its committed offsets", self.name, exc, group)
                self.wait(2.0)
            finally:
                while watched:
                    self.unwatch_lag(watched.pop())


class _StatelessHandler:
    """A :meth:`StreamProcess.run_stage` callback as a :class:`~focuscrawl.topics.changelog.TransactionalStage`
    handler without state; counts what it consumes and publishes, skips a record whose handling fails."""

    def __init__(self, proc: StreamProcess, handle: Callable[[Any], Iterable[Output]],
                 idle: Callable[[], Iterable[Output]]) -> None:
        self.proc, self._handle, self._idle = proc, handle, idle

    def assigned(self, partitions: list[int], state: dict) -> None:
        pass

    def revoked(self, partitions: list[int]) -> None:
        pass

    def changes(self) -> Iterable:
        return ()

    def _published(self, outputs: Iterable[Output]) -> list[Output]:
        outputs = list(outputs)
        for topic, _key, _value in outputs:
            self.proc.metrics.produced.labels(topic).inc()
        return outputs

    def handle(self, record) -> list[Output]:
        self.proc.metrics.consumed.labels(record.topic).inc()
        try:
            return self._published(self._handle(record))
        except Stopped:  # a stop while the record waited: its batch stays uncommitted, read again on restart
            raise
        except Exception:  # noqa: BLE001 - one bad record or fetch must not stop the stage
            self.proc.metrics.record_errors.labels(record.topic).inc()
            log.exception("record %s@%d:%d failed; skipped", record.topic, record.partition, record.offset)
            return []

    def idle(self, caught_up: bool) -> list[Output]:
        return self._published(self._idle())
