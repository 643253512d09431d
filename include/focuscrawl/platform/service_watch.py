"""The services a platform started (Kafka, Airflow's components, the world), supervised like its processes.

A service is probed every ``every`` seconds by what shows it alive: its processes' pids and, for Kafka,
its port (``alive()``, or ``healthy()`` for a service without one: a busy Airflow answering its health
check slowly is not dead). ``misses`` failed probes in a row restart it in a background thread, by its
``heal()`` (Airflow starts only the components that died) or ``start()``, with a back-off of 1 s doubling
to 60 s between failed restarts, reset when a probe passes again. A restarted world resumes its clock
(``--clock-file``); the leftovers of a killed process's group (Airflow's LocalExecutor workers) are
stopped before it starts again (``ManagedProcess.start``). What it saw goes to
``$FOCUSCRAWL_VAR/platform/services.json``, which ``focuscrawl status`` shows.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from focuscrawl.core.status_file import read_status, write_status

log = logging.getLogger(__name__)

UP, DOWN, RESTARTING = "up", "down", "restarting"


@dataclass
class ServiceState:
    name: str
    state: str = UP
    misses: int = 0
    restarts: int = 0
    failed_restarts: int = 0  # in a row: the back-off grows with them
    last_restart_at: float | None = None
    last_error: str | None = None
    next_try_at: float | None = None


@dataclass
class ServiceWatch:
    services: dict  # name -> a service of focuscrawl.services (start(), and alive() or healthy(); heal() optional)
    var_dir: Path
    every: float = 5.0
    misses: int = 2
    backoff: tuple[float, float] = (1.0, 60.0)
    clock: Callable[[], float] = time.time
    states: dict[str, ServiceState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.states = {name: ServiceState(name) for name in self.services}
        self.stopping = threading.Event()
        self._restarts: dict[str, threading.Thread] = {}
        self._thread: threading.Thread | None = None

    @property
    def status_file(self) -> Path:
        return status_path(self.var_dir)

    def _alive(self, name: str) -> bool:
        svc = self.services[name]
        probe = svc.alive if hasattr(svc, "alive") else svc.healthy
        try:
            return bool(probe())
        except Exception:  # noqa: BLE001 - a probe that fails is a miss
            return False

    def step(self) -> None:
        """One probe of every service; a restart is started where one is due."""
        now = self.clock()
        for name, s in self.states.items():
            if name in self._restarts and self._restarts[name].is_alive():
                continue
            if self._alive(name):
                s.state, s.misses, s.failed_restarts, s.next_try_at = UP, 0, 0, None
                continue
            s.misses += 1
            if s.misses < self.misses:
                continue
            s.state = DOWN
            if s.next_try_at is not None and now < s.next_try_at:
                continue
            s.state = RESTARTING
            thread = threading.Thread(target=self._restart, args=(name,), name=f"restart-{name}", daemon=True)
            self._restarts[name] = thread
            thread.start()
        self.write()

    def _restart(self, name: str) -> None:
        svc, s = self.services[name], self.states[name]
        log.warning("%s: down (%d probes); restarting it", name, s.misses)
        try:
            (svc.heal if hasattr(svc, "heal") else svc.start)()
        except Exception as exc:  # noqa: BLE001 - it stays down: tried again after the back-off
            s.failed_restarts += 1
            s.last_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            low, high = self.backoff
            s.next_try_at = self.clock() + min(high, low * 2 ** (s.failed_restarts - 1))
            s.state = DOWN
            log.error("%s: restart failed (%s); next try in %.0f s", name, s.last_error, s.next_try_at - self.clock())
        else:
            s.restarts += 1
            s.last_restart_at = self.clock()
            s.state, s.misses, s.failed_restarts, s.next_try_at = UP, 0, 0, None
            log.warning("%s: restarted (%d so far)", name, s.restarts)
        self.write()

    def write(self) -> None:
        write_status(self.status_file, {"services": {n: asdict(s) for n, s in self.states.items()},
                                        "updated_at": self.clock()})

    def run(self) -> None:
        while not self.stopping.wait(self.every):
            self.step()

    def start(self) -> None:
        self.write()
        self._thread = threading.Thread(target=self.run, name="focuscrawl-service-watch", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 300.0) -> None:
        """No more probes (call it before the services are stopped); waits for a restart under way."""
        self.stopping.set()
        for thread in [self._thread, *self._restarts.values()]:
            if thread is not None:
                thread.join(timeout)
        self.status_file.unlink(missing_ok=True)


def status_path(var_dir: Path) -> Path:
    return Path(var_dir) / "platform" / "services.json"


def watched(var_dir: Path) -> dict[str, dict]:
    """What the running platform's watch last saw of each service (empty when none runs)."""
    return read_status(status_path(var_dir)).get("services", {})
