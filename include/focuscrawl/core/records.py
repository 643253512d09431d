"""Typed records between modules: frozen dataclasses that read and write their own JSON.

Every message on a Kafka topic and every value one module hands another is a
frozen dataclass; :class:`JsonRecord` gives it ``to_json`` (its fields, in order, as one JSON
object: the wire format the bare dicts had) and ``from_json``, which checks each field against its
annotation as it decodes. A malformed message raises :class:`RecordError` naming the record and the
field (``ExtractRequest.user: missing``), not a ``KeyError`` three calls later. Keys a record does
not know are ignored, so a newer writer's extra field does not break an older reader.

The checks follow the annotations: ``str``, ``bool``, ``int`` (a float with no fraction is taken),
``float`` (an int is taken), ``X | None``, ``tuple[X, ...]`` / ``tuple[X, Y]`` / bare ``tuple``
(from a JSON list), ``dict``, and a dataclass (a record inside a record, checked the same way); any
other annotation is passed through unchecked. A dataclass
that cannot inherit the mixin (it lives in a module its owner keeps) is decoded with
:func:`decode` directly.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import types
import typing
from functools import cache
from typing import Any, Callable, Iterable, Mapping, TypeVar

T = TypeVar("T")

_MISSING = dataclasses.MISSING


class RecordError(ValueError):
    """A message that is not the record it should be: names the record and, where one is at fault, the field."""

    def __init__(self, record: str, problem: str, field: str | None = None) -> None:
        super().__init__(f"{record}.{field}: {problem}" if field else f"{record}: {problem}")
        self.record, self.field, self.problem = record, field, problem


class _Wrong(Exception):
    """Raised by a field checker: the value does not fit (the message says why)."""


def _instance_of(kind: type, what: str) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if not isinstance(v, kind):
            raise _Wrong(f"expected {what}, got {v!r}")
        return v
    return check


_check_str = _instance_of(str, "a string")
_check_bool = _instance_of(bool, "true or false")
_check_dict = _instance_of(dict, "a JSON object")


def _check_float(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Wrong(f"expected a number, got {v!r}")
    return float(v)


def _check_int(v: Any) -> int:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Wrong(f"expected an integer, got {v!r}")
    return v


def _check_any(v: Any) -> Any:
    return v


def _optional(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: None if v is None else inner(v)


def _sequence(v: Any) -> list | tuple:
    if not isinstance(v, (list, tuple)):
        raise _Wrong(f"expected a list, got {v!r}")
    return v


def _items(checks: Iterable[Callable[[Any], Any]], seq: list | tuple) -> tuple:
    out = []
    for i, (check, item) in enumerate(zip(checks, seq)):
        try:
            out.append(check(item))
        except _Wrong as wrong:
            raise _Wrong(f"item {i}: {wrong}") from None
    return tuple(out)


def _tuple_of(item: Callable[[Any], Any]) -> Callable[[Any], tuple]:
    return lambda v: _items(itertools.repeat(item), _sequence(v))


def _fixed_tuple(parts: tuple[Callable[[Any], Any], ...]) -> Callable[[Any], tuple]:
    def check(v: Any) -> tuple:
        if len(_sequence(v)) != len(parts):
            raise _Wrong(f"expected a list of {len(parts)} items, got {v!r}")
        return _items(parts, v)
    return check


def _checker(hint: Any) -> Callable[[Any], Any]:
    """The checker of one annotation (see the module docstring for what is checked)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        inner = _checker(rest[0]) if len(rest) == 1 else _check_any
        return _optional(inner) if type(None) in args else inner
    if hint is tuple or origin is tuple:
        if not args:
            return _tuple_of(_check_any)
        if len(args) == 2 and args[1] is Ellipsis:
            return _tuple_of(_checker(args[0]))
        return _fixed_tuple(tuple(_checker(a) for a in args))
    if hint is dict or origin is dict:
        return _check_dict
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return lambda v: _nested(hint, v)
    return {str: _check_str, bool: _check_bool, int: _check_int, float: _check_float}.get(hint, _check_any)


def _nested(cls: type, value: Any) -> Any:
    """A record inside a record (an item of a list of records): decoded and checked like the outer one."""
    if not isinstance(value, Mapping):
        raise _Wrong(f"expected a JSON object ({cls.__name__}), got {value!r:.80}")
    try:
        return decode(cls, value)
    except RecordError as inner:
        raise _Wrong(str(inner)) from None


@cache
def _plan(cls: type) -> tuple[tuple[str, bool, Callable[[Any], Any]], ...]:
    """``(field, required, checker)`` for each init field of the dataclass ``cls`` (computed once per class)."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, f.default is _MISSING and f.default_factory is _MISSING, _checker(hints[f.name]))
                 for f in dataclasses.fields(cls) if f.init)


def json_object(value: bytes | str | Mapping | None, record: str) -> Mapping:
    """``value`` (JSON bytes/str, or already decoded) as a JSON object; :class:`RecordError` naming ``record`` if not."""
    if isinstance(value, (bytes, bytearray, str)):
        try:
            value = json.loads(value)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RecordError(record, f"not JSON ({exc})") from None
    elif value is None:
        raise RecordError(record, "no value (a tombstone?) where a JSON object was expected")
    if not isinstance(value, Mapping):
        raise RecordError(record, f"expected a JSON object, got {type(value).__name__} {value!r:.80}")
    return value


def field_value(record: str, row: Mapping, field: str, hint: Any) -> Any:
    """``row[field]`` checked against the annotation ``hint``, for a record whose JSON is not only its fields."""
    if field not in row:
        raise RecordError(record, "missing", field)
    return _checked(record, row, field, _checker(hint))


def _checked(record: str, row: Mapping, field: str, check: Callable[[Any], Any]) -> Any:
    try:
        return check(row[field])
    except _Wrong as wrong:
        raise RecordError(record, str(wrong), field) from None


def fields_of(cls: type, value: bytes | str | Mapping, record: str | None = None) -> dict[str, Any]:
    """The checked keyword arguments of the dataclass ``cls`` from a JSON value (bytes/str) or a decoded
    object; raises :class:`RecordError` naming ``record`` (default: the class name) and the field."""
    name = record or cls.__name__
    row = json_object(value, name)
    out = {}
    for field, required, check in _plan(cls):
        if field not in row:
            if required:
                raise RecordError(name, "missing", field)
            continue
        out[field] = _checked(name, row, field, check)
    return out


def decode(cls: type[T], value: bytes | str | Mapping) -> T:
    """An instance of the dataclass ``cls`` from its JSON, every field checked (:func:`fields_of`)."""
    return cls(**fields_of(cls, value))


def _fields(record: Any) -> dict[str, Any]:
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise TypeError(f"{type(record).__name__} is not a record (a dataclass instance) and has no JSON")
    return {name: getattr(record, name) for name, _, _ in _plan(type(record))}


def encode(record: Any, **dumps: Any) -> bytes:
    """The JSON of a dataclass instance: its init fields in order (tuples as lists, records inside as objects)."""
    return json.dumps(_fields(record), default=_fields, **dumps).encode()


class JsonRecord:
    """Mixin of a frozen dataclass: ``to_json`` (:func:`encode`) and ``from_json`` (:func:`decode`)."""

    __slots__ = ()

    def to_json(self) -> bytes:
        return encode(self)

    @classmethod
    def from_json(cls: type[T], value: bytes | str | Mapping) -> T:
        return decode(cls, value)
