"""Register implementations of one protocol by name, so users pick them with ``--methods HCP,RND``."""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """A named family of classes behind one protocol (ranking methods, schedulers, estimators...)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        key = name.upper()

        def add(cls: type[T]) -> type[T]:
            if key in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice ({self._items[key]} and {cls})")
            self._items[key] = cls
            return cls

        return add

    def get(self, name: str) -> type[T]:
        try:
            return self._items[name.upper()]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise KeyError(f"unknown {self.kind} {name!r}; known {self.kind}s: {known}") from None

    def create(self, name: str, **kwargs) -> T:
        return self.get(name)(**kwargs)

    def name_of(self, obj: T) -> str:
        """The name ``obj``'s class is registered under."""
        for name, cls in self._items.items():
            if type(obj) is cls:
                return name
        raise KeyError(f"{type(obj).__name__} is no registered {self.kind}")

    def names(self) -> list[str]:
        return sorted(self._items)

    def parse(self, spec: str) -> list[str]:
        """``"HCP,rnd"`` -> ``["HCP", "RND"]``, failing on the first unknown name."""
        names = [s.strip().upper() for s in spec.split(",") if s.strip()]
        for n in names:
            self.get(n)
        return names
