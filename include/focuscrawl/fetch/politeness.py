"""Per-host politeness: at most ``max_in_flight`` requests per host, and a pause between them.

As Heritrix and Scrapy's ``DOWNLOAD_DELAY`` do it: the pause runs from the
end of one request to the start of the next on the same host, and is the larger of the
configured ``min_delay`` and the host's robots.txt ``Crawl-delay``. A 429/503 ``Retry-After``
pushes the host's next slot back for every thread, not only the one that got it.

The pause must hold across crawler instances too, or two instances pointed at one host
give it twice the rate. A :class:`SharedHostLedger` (a folder of one small file per host, under
the settings' var folder by default) carries each host's next permitted start between processes:
an instance holds one of the host's ``max_in_flight`` slot locks (``flock``) for the length of its
request and pushes the host's next start time when it lets go, so across instances a host sees
what one instance would give it: ``max_in_flight`` requests in flight and the pause after each. A
crashed instance's locks go with its process. The same
holds across machines that share the folder on a file system with working ``flock`` (NFSv4, CephFS).

Time is injected (``clock``/``sleep``), so tests run politeness on a fake clock without sleeping.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

# How long an instance waiting for another's host lock sleeps between tries: short, so a stop
# signal is seen promptly; the wait for the pause itself is one sleep.
_LOCK_POLL = 0.02


class SharedHostLedger:
    """Each host's in-flight slots and next permitted start, shared by every instance that opens the folder."""

    def __init__(self, directory: str | Path, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.clock = clock  # wall time: the one clock processes (and machines) share
        self.sleep = sleep

    def _open(self, host: str, suffix: str) -> int:
        name = hashlib.sha1(host.encode()).hexdigest()[:20]
        return os.open(self.directory / f"{name}.{suffix}", os.O_RDWR | os.O_CREAT, 0o600)

    @staticmethod
    def _read(fd: int) -> float:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode("ascii", errors="ignore").strip()
        try:
            return float(text)
        except ValueError:  # empty (a new host) or torn by a crash mid-write: no constraint
            return 0.0

    def _push_next(self, fd: int, not_before: float) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            data = f"{max(self._read(fd), not_before):.6f}\n".encode()
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, data)
            os.ftruncate(fd, len(data))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def _take_slot(self, host: str, slots: int) -> int | None:
        for i in range(slots):
            fd = self._open(host, f"slot{i}")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:  # another instance is fetching from this host in that slot
                os.close(fd)
        return None

    @contextmanager
    def turn(self, host: str, pause: float, slots: int = 1) -> Iterator[None]:
        """Hold one of ``host``'s ``slots`` across instances for one request, once the host's pause
        is over; afterwards no instance starts on it for ``pause`` seconds."""
        nxt = self._open(host, "next")
        try:
            while True:
                slot = self._take_slot(host, slots)
                if slot is None:
                    self.sleep(_LOCK_POLL)
                    continue
                fcntl.flock(nxt, fcntl.LOCK_SH)
                wait = self._read(nxt) - self.clock()
                fcntl.flock(nxt, fcntl.LOCK_UN)
                if wait <= 0:
                    break
                os.close(slot)  # closing drops the lock: others may take the slot while we rest
                self.sleep(wait)
            try:
                yield
            finally:
                self._push_next(nxt, self.clock() + pause)
                os.close(slot)
        finally:
            os.close(nxt)

    def defer(self, host: str, seconds: float) -> None:
        """No instance starts a request to ``host`` for ``seconds``."""
        nxt = self._open(host, "next")
        try:
            self._push_next(nxt, self.clock() + seconds)
        finally:
            os.close(nxt)


@dataclass
class _Host:
    in_flight: int = 0
    next_start: float = 0.0


class HostPoliteness:
    """Thread-safe gate in front of every request, keyed by ``scheme://host:port``; with a
    ``ledger``, the gate holds across processes too."""

    def __init__(self, min_delay: float = 1.0, max_in_flight: int = 1, ledger: SharedHostLedger | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.min_delay = min_delay
        self.max_in_flight = max_in_flight
        self.ledger = ledger
        self.host_delay: float | None = None  # see share(); None: the request's own pause
        self.clock = clock
        self.sleep = sleep
        self._hosts: dict[str, _Host] = {}
        self._cond = threading.Condition()

    def share(self, ledger: SharedHostLedger, host_delay: float | None = None) -> "HostPoliteness":
        """Use ``ledger`` for the cross-instance gate unless one is set already; returns self.

        ``host_delay`` is the pause every instance owes the host after a request (the site's
        politeness): a larger ``min_delay`` of this instance, such as a loop's fetch budget, then
        paces only this instance instead of shutting the host for every other one."""
        if self.ledger is None:
            self.ledger = ledger
            self.host_delay = host_delay
        return self

    @contextmanager
    def slot(self, host: str, delay: float | None = None) -> Iterator[None]:
        """Wait for a free, rested slot on ``host``; the pause after it is ``max(min_delay, delay)``."""
        pause = max(self.min_delay, delay or 0.0)
        with self._cond:
            state = self._hosts.setdefault(host, _Host())
            while True:
                if state.in_flight >= self.max_in_flight:
                    self._cond.wait()  # a finishing request notifies
                    continue
                wait = state.next_start - self.clock()
                if wait <= 0:
                    break
                self._cond.release()  # sleep outside the lock; defer() may push next_start further
                try:
                    self.sleep(wait)
                finally:
                    self._cond.acquire()
            state.in_flight += 1
        try:
            if self.ledger is not None:
                shared = pause if self.host_delay is None else max(self.host_delay, delay or 0.0)
                with self.ledger.turn(host, shared, self.max_in_flight):
                    yield
            else:
                yield
        finally:
            with self._cond:
                state.in_flight -= 1
                state.next_start = max(state.next_start, self.clock() + pause)
                self._cond.notify_all()

    def defer(self, host: str, seconds: float) -> None:
        """No request to ``host`` for ``seconds`` (a ``Retry-After``), from any instance sharing the ledger."""
        with self._cond:
            state = self._hosts.setdefault(host, _Host())
            state.next_start = max(state.next_start, self.clock() + seconds)
            self._cond.notify_all()
        if self.ledger is not None:
            self.ledger.defer(host, seconds)
