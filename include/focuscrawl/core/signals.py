"""SIGTERM/SIGINT as a stop event, for the long-running processes that wait on one (the supervisor, ``up``, the
world server, the asset-events process)."""

from __future__ import annotations

import signal
import threading


def set_on_signals(event: threading.Event, signals=(signal.SIGTERM, signal.SIGINT)) -> None:
    """SIGTERM/SIGINT set ``event``, from a helper thread: ``Event.set`` inside the handler itself
    can deadlock on the Condition lock the interrupted ``event.wait()`` of the main thread holds."""
    for sig in signals:
        signal.signal(sig, lambda *_: threading.Thread(target=event.set, daemon=True).start())
