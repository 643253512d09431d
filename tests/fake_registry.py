"""A model registry kept in memory: what :class:`focuscrawl.services.model_registry.ModelRegistry` is asked by the
mirror and the rollback (:mod:`focuscrawl.orchestration.model_families`), for the wiring tests of every family."""

from __future__ import annotations

from pathlib import Path


class FakeRegistry:
    def __init__(self) -> None:
        self.logged: list[dict] = []
        self.aliases: dict[str, int] = {}  # name -> the version its champion alias points at
        self.alias_calls = 0  # set_champion calls: the mirror sets an alias only when it moved

    def log_version(self, experiment, name, files, params, metrics, delta_versions, tags=None) -> int:
        assert all(Path(f).is_file() for f in files)
        self.logged.append({"experiment": experiment, "name": name, "files": [Path(f).name for f in files],
                            "params": dict(params), "metrics": dict(metrics),
                            "delta_versions": dict(delta_versions), "tags": dict(tags or {})})
        return sum(1 for entry in self.logged if entry["name"] == name)

    def set_champion(self, name, version) -> None:
        self.alias_calls += 1
        self.aliases[name] = version

    def champion(self, name) -> int | None:
        return self.aliases.get(name)

    def of(self, name) -> list[dict]:
        return [e for e in self.logged if e["name"] == name]
