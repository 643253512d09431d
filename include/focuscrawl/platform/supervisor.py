"""The supervisor: every declared process kept running, restarted with back-off, stopped in order.

Modelled on the supervisors operators already trust (supervisord, systemd, Kubernetes): each
process is declared once (:class:`ProcessSpec`: command, environment, restart policy); a crashed
process is restarted after an exponential back-off (1 s doubling to a cap); a crash loop (more
than ``crashloop_restarts`` restarts within ``crashloop_window`` seconds) stops the retries and
keeps the last lines of the log for ``focuscrawl status``; shutdown goes tier by tier (crawlers
first, the consumers into Delta last so they land what is still in flight) with a grace period,
then SIGKILL of the whole process group.

Every process is a :class:`focuscrawl.services.process.ManagedProcess` (own process group, pid
file, log file). Health is what the process exposes, not whether its pid exists: its metrics
endpoint answers, or its status file was rewritten lately. The supervisor's view goes atomically
to ``$FOCUSCRAWL_VAR/platform/state.json``; a supervisor started after another was SIGKILLed
adopts the children still running (their pid files, the same command line) instead of starting
doubles.

    python -m focuscrawl.platform.supervisor SPECS.json     # supervise the specs of a JSON file

No engine is imported here: the supervisor only runs commands.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from focuscrawl.services.process import ManagedProcess, group_members, pid_alive, port_open
from focuscrawl.core.signals import set_on_signals
from focuscrawl.core.status_file import read_status, write_status

log = logging.getLogger("focuscrawl.platform.supervisor")

# Process states shown by ``focuscrawl status``.
UP, BACKOFF, CRASHLOOP, STOPPED, EXITED = "up", "backoff", "crashloop", "stopped", "exited"
WAITING = "waiting"  # held at start until its loop is released (Supervisor.release)


@dataclass(frozen=True)
class RestartPolicy:
    """When and how fast a process that ended is started again.

    ``restart``: ``always`` (a stream process: any exit is a failure), ``on-failure`` (a job that
    may finish: exit 0 is done) or ``never``. A process that ran ``healthy_after`` seconds before
    it ended starts the back-off from ``backoff_initial`` again.

    A crash loop is more than ``crashloop_restarts`` exits within ``crashloop_window`` seconds, or
    ``same_error_exits`` exits in a row with an error code that end on the same error (the last log
    line, digits aside; an exit by a signal, a kill from outside, breaks the row),
    however long each run lasted: a chooser of a fault campaign failed its first transaction every
    20-50 s for 23 minutes, spread too thin for the window and each run counted healthy. A run of
    ``same_error_reset`` seconds or more starts that count again.
    """

    restart: str = "always"
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    crashloop_restarts: int = 5
    crashloop_window: float = 120.0
    healthy_after: float = 30.0
    same_error_exits: int = 5
    same_error_reset: float = 600.0

    def __post_init__(self) -> None:
        if self.restart not in ("always", "on-failure", "never"):
            raise ValueError(f"restart policy {self.restart!r}: use always, on-failure or never")
        if self.backoff_initial <= 0 or self.backoff_max < self.backoff_initial:
            raise ValueError("back-off: need 0 < backoff_initial <= backoff_max")

    def delay(self, failures: int) -> float:
        """Seconds to wait before restart number ``failures`` (1, 2, ...) of a run of failures."""
        return min(self.backoff_max, self.backoff_initial * 2 ** max(0, failures - 1))


@dataclass(frozen=True)
class ProcessSpec:
    """One declared process. ``tier``: started in ascending order, stopped in descending order."""

    name: str
    kind: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    tier: int = 1
    loop: str | None = None
    metrics_port: int = 0
    status_file: str | None = None
    stop_grace: float = 20.0
    meta: dict = field(default_factory=dict)  # what status shows beside it (a consumer's topic, table, group)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ValueError(f"process name {self.name!r}: a plain file name is needed (pid and log files use it)")
        if not self.command:
            raise ValueError(f"process {self.name}: empty command")
        object.__setattr__(self, "command", tuple(self.command))

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "ProcessSpec":
        d = dict(d)
        d["restart"] = RestartPolicy(**d.get("restart", {}))
        return cls(**d)


@dataclass
class ProcessState:
    """What the supervisor knows of one process; one entry of ``state.json``."""

    name: str
    kind: str
    loop: str | None
    state: str = STOPPED
    pid: int | None = None
    restarts: int = 0
    started_at: float | None = None      # wall clock, for operators
    last_exit: int | None = None         # exit code (negative: signal), None: unknown (adopted)
    last_exit_at: float | None = None
    last_error: list[str] = field(default_factory=list)
    next_start_in: float | None = None
    health: str = "unknown"
    adopted: bool = False
    metrics_port: int = 0
    status_file: str | None = None
    log_file: str = ""


class _Managed:
    """A spec with its ManagedProcess and the supervisor's bookkeeping (monotonic times)."""

    def __init__(self, spec: ProcessSpec, run_dir: Path, log_dir: Path) -> None:
        self.spec = spec
        self.process = ManagedProcess(spec.name, run_dir, log_dir, list(spec.command), env=dict(spec.env) or None,
                                      cwd=Path(spec.cwd) if spec.cwd else None)
        self.state = ProcessState(spec.name, spec.kind, spec.loop, metrics_port=spec.metrics_port,
                                  status_file=spec.status_file, log_file=str(self.process.log_file))
        self.started_mono = 0.0
        self.next_start = 0.0
        self.failures = 0  # consecutive failures (reset after a healthy run)
        self.restart_times: deque[float] = deque()
        self.same_errors, self.last_signature = 0, ""  # exits in a row on the same error (RestartPolicy)


def error_signature(lines: list[str]) -> str:
    """What an exit failed on: its last log line that says something, digits aside (pids, offsets, times)."""
    said = [line.strip() for line in lines if line.strip()]
    return re.sub(r"\d+", "#", said[-1]) if said else ""


def cmdline(pid: int) -> tuple[str, ...]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ()
    return tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)


class Supervisor:
    """Keep ``specs`` running (see the module docstring).

    ``clock`` is monotonic seconds (injected by tests); ``tick`` is the poll period. Call
    :meth:`start` then :meth:`step` periodically (or :meth:`run`), and :meth:`stop` at the end.
    """

    def __init__(self, specs: list[ProcessSpec], var_dir: Path, *, clock: Callable[[], float] = time.monotonic,
                 tick: float = 0.5, stale_after: float = 60.0, tail_lines: int = 20,
                 info: dict | None = None) -> None:
        names = [s.name for s in specs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"process names must be unique; repeated: {', '.join(dupes)}")
        self.var_dir = Path(var_dir)
        self.dir = self.var_dir / "platform"
        self.run_dir = self.var_dir / "run" / "platform"
        self.log_dir = self.var_dir / "logs" / "platform"
        self.clock, self.tick, self.stale_after, self.tail_lines = clock, tick, stale_after, tail_lines
        self.info = dict(info or {})
        self.procs = {s.name: _Managed(s, self.run_dir, self.log_dir) for s in sorted(specs, key=lambda s: s.tier)}
        self.stopping = threading.Event()
        self._lock = threading.RLock()
        self._last_written: dict | None = None

    # -- files -----------------------------------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def pid_file(self) -> Path:
        return self.dir / "supervisor.pid"

    @property
    def specs_file(self) -> Path:
        return self.dir / "specs.json"

    def _previous(self) -> dict:
        return {p["name"]: p for p in read_status(self.state_file).get("processes", [])}

    def write_state(self, force: bool = False) -> dict:
        with self._lock:
            doc = {
                "supervisor": {"pid": os.getpid(), "running": not self.stopping.is_set(), **self.info},
                "processes": [asdict(m.state) for m in self.procs.values()],
            }
        if force or doc != self._last_written:
            doc["updated_at"] = time.time()
            write_status(self.state_file, doc)
            self._last_written = {k: v for k, v in doc.items() if k != "updated_at"}
        return doc

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, held: frozenset[str] = frozenset()) -> None:
        """Start every process tier by tier, adopting those a killed supervisor left running; those of the loops in
        ``held`` wait (state ``waiting``) until :meth:`release` starts them."""
        self.dir.mkdir(parents=True, exist_ok=True)
        other = _live_pid(self.pid_file)
        if other is not None and other != os.getpid():
            raise RuntimeError(f"another supervisor (pid {other}) runs out of {self.var_dir}; "
                               f"`focuscrawl down` it first, or look at it with `focuscrawl status`")
        self.pid_file.write_text(str(os.getpid()))
        write_status(self.specs_file, {"specs": [m.spec.to_json() for m in self.procs.values()]})
        previous = self._previous()
        for m in self.procs.values():
            before = previous.get(m.spec.name, {})
            m.state.restarts = int(before.get("restarts", 0))
            pid = m.process.pid()
            if pid is not None and cmdline(pid) == m.spec.command:
                m.state.pid, m.state.state, m.state.adopted = pid, UP, True
                m.state.started_at = before.get("started_at") or time.time()
                m.started_mono = self.clock()
                log.info("%s: adopted (pid %d, still running)", m.spec.name, pid)
            else:
                if pid is not None:
                    log.warning("%s: pid file names pid %d, which runs something else; starting anew", m.spec.name, pid)
                    m.process.pid_file.unlink(missing_ok=True)
                if m.spec.loop in held:
                    m.state.state = WAITING
                else:
                    self._launch(m)
        self.write_state(force=True)

    def release(self, loop: str) -> list[str]:
        """Start the processes of ``loop`` held by :meth:`start`, tier by tier; their names."""
        with self._lock:
            waiting = [m for m in self.procs.values() if m.spec.loop == loop and m.state.state == WAITING]
            for m in waiting:
                if not self.stopping.is_set():
                    self._launch(m)
        self.write_state(force=True)
        return [m.spec.name for m in waiting]

    def _launch(self, m: _Managed) -> None:
        _kill_leftovers(m)
        if m.spec.status_file:
            Path(m.spec.status_file).parent.mkdir(parents=True, exist_ok=True)
        try:
            pid = m.process.start()
        except OSError as exc:  # the command itself cannot run (missing file): a failure like any other
            m.state.pid, m.state.state = None, UP
            with open(m.process.log_file, "a") as f:  # where `focuscrawl logs` and the crash-loop tail look
                f.write(f"supervisor: could not start {m.spec.command[0]}: {exc}\n")
            m.started_mono = self.clock()
            self._ended(m, 127)
            return
        m.state.pid, m.state.state, m.state.adopted = pid, UP, False
        m.state.started_at, m.state.next_start_in, m.state.health = time.time(), None, "starting"
        m.started_mono = self.clock()
        log.info("%s: started (pid %d): %s", m.spec.name, pid, " ".join(m.spec.command))

    def step(self) -> None:
        """One supervision pass: notice exits, restart what is due, refresh health and state.json."""
        now = self.clock()
        with self._lock:
            for m in self.procs.values():
                if self.stopping.is_set():
                    break
                if m.state.state == UP:
                    code = m.process.returncode()
                    # Our own child: its Popen knows; an adopted one: only the pid can tell.
                    alive = code is None and m.state.pid is not None and (not m.state.adopted or pid_alive(m.state.pid))
                    if not alive:
                        self._ended(m, code)
                    else:
                        m.state.health = self._health(m, now)
                elif m.state.state == BACKOFF:
                    if now >= m.next_start:
                        m.state.restarts += 1
                        self._launch(m)
                    else:
                        m.state.next_start_in = round(m.next_start - now, 2)
        self.write_state()

    def _ended(self, m: _Managed, code: int | None) -> None:
        now = self.clock()
        _kill_leftovers(m)
        m.process.pid_file.unlink(missing_ok=True)
        ran = now - m.started_mono
        m.state.last_exit, m.state.last_exit_at, m.state.pid = code, time.time(), None
        m.state.last_error = m.process.log_tail(self.tail_lines).splitlines()
        m.state.health = "down"
        policy = m.spec.restart
        if policy.restart == "never" or (policy.restart == "on-failure" and code == 0):
            m.state.state = EXITED
            log.info("%s: exited (%s); not restarted (%s)", m.spec.name, code, policy.restart)
            return
        m.failures = 1 if ran >= policy.healthy_after else m.failures + 1
        m.restart_times.append(now)
        while m.restart_times and now - m.restart_times[0] > policy.crashloop_window:
            m.restart_times.popleft()
        # Only a process that ended itself with an error counts (a SIGKILL from outside says nothing of it).
        signature = error_signature(m.state.last_error) if code is not None and code > 0 else ""
        same = bool(signature) and signature == m.last_signature and ran < policy.same_error_reset
        m.same_errors, m.last_signature = (m.same_errors + 1 if same else int(bool(signature))), signature
        if len(m.restart_times) > policy.crashloop_restarts or m.same_errors >= policy.same_error_exits:
            why = (f"{len(m.restart_times)} exits within {policy.crashloop_window:.0f} s"
                   if len(m.restart_times) > policy.crashloop_restarts else
                   f"{m.same_errors} exits in a row on the same error: {m.state.last_error and signature}")
            m.state.state, m.state.next_start_in = CRASHLOOP, None
            log.error("%s: crash loop (%s); not restarted. Last lines:\n%s", m.spec.name, why,
                      "\n".join(m.state.last_error))
            return
        delay = policy.delay(m.failures)
        m.next_start = now + delay
        m.state.state, m.state.next_start_in = BACKOFF, round(delay, 2)
        log.warning("%s: exited with %s after %.1f s; restart in %.1f s", m.spec.name, code, ran, delay)

    def _health(self, m: _Managed, now: float) -> str:
        """``ok`` when the metrics endpoint answers or the status file is fresh, ``starting`` in the
        first ``stale_after`` seconds, ``unhealthy`` after (the pid alone proves nothing)."""
        if m.spec.metrics_port and port_open("127.0.0.1", m.spec.metrics_port, timeout=0.2):
            return "ok"
        if m.spec.status_file:
            try:
                if time.time() - Path(m.spec.status_file).stat().st_mtime <= self.stale_after:
                    return "ok"
            except OSError:
                pass
        if not m.spec.metrics_port and not m.spec.status_file:
            return "running"  # exposes nothing: the pid is all there is
        return "starting" if now - m.started_mono < self.stale_after else "unhealthy"

    def run(self, until: Callable[[], bool] = lambda: False) -> None:
        """Supervise until :meth:`request_stop` (or SIGTERM via :meth:`handle_signals`) or ``until()``."""
        while not self.stopping.is_set() and not until():
            self.step()
            self.stopping.wait(self.tick)

    def request_stop(self) -> None:
        self.stopping.set()

    def handle_signals(self) -> None:
        set_on_signals(self.stopping)

    def stop(self) -> None:
        """Ordered shutdown: lowest tier first (the fetchers, then the stages, the consumers into Delta
        last, so they land what is in flight: ``platform.plan``); within a tier in parallel, each with
        its grace period, then SIGKILL of its group (``ManagedProcess.stop``)."""
        self.stopping.set()
        with self._lock:
            tiers = sorted({m.spec.tier for m in self.procs.values()})
            for tier in tiers:
                group = [m for m in self.procs.values() if m.spec.tier == tier]
                with ThreadPoolExecutor(max_workers=max(1, len(group))) as pool:
                    list(pool.map(self._stop_one, group))
        self.write_state(force=True)
        if _live_pid(self.pid_file) == os.getpid():
            self.pid_file.unlink(missing_ok=True)

    def _stop_one(self, m: _Managed) -> None:
        code = m.process.returncode()
        m.process.stop(timeout=m.spec.stop_grace)
        _kill_leftovers(m)
        if m.state.state == UP:
            m.state.last_exit = code if code is not None else m.process.returncode()
            m.state.last_exit_at = time.time()
        m.state.state, m.state.pid, m.state.health, m.state.next_start_in = STOPPED, None, "down", None
        log.info("%s: stopped", m.spec.name)

    # -- operations ------------------------------------------------------------------------

    def kill(self, name: str) -> int:
        """SIGKILL one process's group (fault tests); the next :meth:`step` restarts it. Its old pid."""
        m = self.procs[name]
        pid = m.state.pid
        if pid is None:
            raise RuntimeError(f"{name} is not running (state {m.state.state})")
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return pid

    def state_of(self, name: str) -> ProcessState:
        return self.procs[name].state

    def wait_up(self, name: str, timeout: float = 60.0, healthy: bool = False, after_pid: int | None = None) -> int:
        """Wait until ``name`` runs (``healthy``: and reports ``ok``; ``after_pid``: as a new pid). Its pid."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.procs[name].state
            if s.state == UP and s.pid and s.pid != after_pid and (not healthy or s.health == "ok"):
                return s.pid
            if s.state == CRASHLOOP:
                raise RuntimeError(f"{name} is in a crash loop; last lines:\n" + "\n".join(s.last_error))
            time.sleep(0.1)
        raise TimeoutError(f"{name} not up after {timeout:.0f}s (state {self.procs[name].state.state})")


def _kill_leftovers(m: _Managed) -> None:
    """SIGKILL what is left of a process group whose leader ended (no double after a restart)."""
    pgid = m.state.pid
    if pgid is None or not group_members(pgid):
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + 5
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _live_pid(path: Path) -> int | None:
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def supervisor_pid(var_dir: Path) -> int | None:
    """The pid of the supervisor running out of ``var_dir``, if one is alive."""
    return _live_pid(Path(var_dir) / "platform" / "supervisor.pid")


def read_state(var_dir: Path) -> dict:
    """The last ``state.json`` written out of ``var_dir`` (empty when none)."""
    return read_status(Path(var_dir) / "platform" / "state.json")


def stop_orphans(var_dir: Path, log_line=print) -> list[str]:
    """Stop the processes of a supervisor that is gone (SIGKILLed), from the specs it wrote."""
    specs = [ProcessSpec.from_json(d) for d in read_status(Path(var_dir) / "platform" / "specs.json").get("specs", [])]
    if not specs:
        return []
    sup = Supervisor(specs, var_dir)
    stopped = []
    for tier in sorted({s.tier for s in specs}):  # the order of Supervisor.stop
        for m in (m for m in sup.procs.values() if m.spec.tier == tier):
            pid = m.process.pid()
            if pid is not None and cmdline(pid) == m.spec.command:
                m.process.stop(timeout=m.spec.stop_grace)
                stopped.append(m.spec.name)
                log_line(f"{m.spec.name}: stopped (pid {pid})")
    return stopped


def main(argv: list[str] | None = None) -> int:
    """Supervise the specs in a JSON file (``{"specs": [...]}``) until SIGTERM/SIGINT."""
    import argparse

    ap = argparse.ArgumentParser(description="Supervise the process specs of a JSON file until SIGTERM.",
                                 epilog="example: python -m focuscrawl.platform.supervisor var/platform/specs.json")
    ap.add_argument("specs", type=Path)
    ap.add_argument("--var", type=Path, default=None, help="state folder (default: $FOCUSCRAWL_VAR)")
    ap.add_argument("--tick", type=float, default=0.5)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from focuscrawl.config import settings

    specs = [ProcessSpec.from_json(d) for d in json.loads(args.specs.read_text())["specs"]]
    sup = Supervisor(specs, args.var or settings().var_dir, tick=args.tick)
    sup.handle_signals()
    sup.start()
    try:
        sup.run()
    finally:
        sup.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
