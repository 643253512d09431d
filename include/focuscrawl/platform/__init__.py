"""The running platform: ``focuscrawl up/down/status/logs/train``.

``supervisor`` keeps the declared processes running, ``plan`` turns a project into the process
specs its loops need, ``up`` brings the services, models, DAGs and processes up (``Platform``),
``status`` gathers what every part exposes. Engines are imported only inside the calls.
"""

from __future__ import annotations


def __getattr__(name: str):
    if name == "Platform":
        from focuscrawl.platform.up import Platform

        return Platform
    raise AttributeError(name)


__all__ = ["Platform"]
