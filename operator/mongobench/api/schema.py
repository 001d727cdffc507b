"""Parsing JSON-like spec dicts into frozen dataclasses, field names mapped to camelCase."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

T = TypeVar("T")


class SpecError(ValueError):
    """A spec the operator cannot use; the message names the field (e.g. spec.topology.type)."""


def json_name(field: dataclasses.Field[Any]) -> str:
    """The field's name in the resource: metadata['json'] or the camelCase of its Python name."""
    explicit = field.metadata.get("json")
    if explicit:
        return str(explicit)
    head, *rest = field.name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def renamed(json: str) -> dict[str, str]:
    """Field metadata for names camelCase cannot derive (e.g. wiredTigerCacheSizeGB)."""
    return {"json": json}


def from_dict(cls: type[T], data: Mapping[str, Any] | None, path: str = "spec") -> T:
    """Build dataclass `cls` from `data`; missing keys take the dataclass default."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SpecError(f"{path}: expected an object, got {type(data).__name__}")
    hints = get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        key = json_name(field)
        if key in data and data[key] is not None:
            kwargs[field.name] = _convert(hints[field.name], data[key], f"{path}.{key}")
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field without a value
        raise SpecError(f"{path}: {exc}") from None


def field_of(cls: type[Any], data: Mapping[str, Any] | None, name: str, path: str = "spec") -> Any:
    """Field `name` (its Python name) of model `cls` from `data` alone, converted and defaulted
    as from_dict does, the rest of `data` unread: for a reader that must not stop at a field it
    does not need (another run in the queue, a spec being deleted)."""
    (field,) = [f for f in dataclasses.fields(cls) if f.name == name]
    key = json_name(field)
    value = None if data is None else data.get(key)
    if value is not None:
        return _convert(get_type_hints(cls)[name], value, f"{path}.{key}")
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    raise SpecError(f"{path}.{key}: required")


def _convert(hint: Any, value: Any, path: str) -> Any:
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):  # Optional[X]
        inner = [a for a in get_args(hint) if a is not type(None)]
        return _convert(inner[0], value, path)
    if origin is typing.Literal:
        return _convert_literal(hint, value, path)
    if origin is tuple:
        return _convert_tuple(hint, value, path)
    if origin in (dict, Mapping) or hint is dict:
        return _convert_mapping(hint, value, path)
    if dataclasses.is_dataclass(hint):
        return from_dict(typing.cast(type[Any], hint), value, path)
    return _convert_scalar(hint, value, path)


def _convert_literal(hint: Any, value: Any, path: str) -> Any:
    if value not in get_args(hint):
        allowed = ", ".join(map(str, get_args(hint)))
        raise SpecError(f"{path}: {value!r} is not one of {allowed}")
    return value


def _convert_tuple(hint: Any, value: Any, path: str) -> tuple[Any, ...]:
    (item,) = {a for a in get_args(hint) if a is not Ellipsis}
    if not isinstance(value, list):
        raise SpecError(f"{path}: expected a list")
    return tuple(_convert(item, v, f"{path}[{i}]") for i, v in enumerate(value))


def _convert_mapping(hint: Any, value: Any, path: str) -> dict[Any, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(f"{path}: expected an object")
    args = get_args(hint)
    if len(args) == 2 and dataclasses.is_dataclass(args[1]):
        return {k: _convert(args[1], v, f"{path}.{k}") for k, v in value.items()}
    return dict(value)


def _convert_scalar(hint: Any, value: Any, path: str) -> Any:
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint in (int, str, bool) and not isinstance(value, hint):
        raise SpecError(f"{path}: expected {hint.__name__}, got {type(value).__name__}")
    if hint is int and isinstance(value, bool):
        raise SpecError(f"{path}: expected int, got bool")
    return value
