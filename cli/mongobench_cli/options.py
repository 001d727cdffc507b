"""Options shared by commands, declared once: a group is a frozen dataclass whose fields are the
options (an `Annotated[..., typer.Option(...)]` type and a default); a command takes the group
as one parameter, and `groups` lays its options out in the command's signature, in place, for
typer (and so for --help and completion), then hands the command the group built from them.

A group's field may be a group itself: its options stand where the field does (compare's
--test and --alpha, a group of their own that calibrate takes alone, sit between --metric and
--confidence)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, TypeVar, get_type_hints

F = TypeVar("F", bound=Callable[..., Any])


def _is_group(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def _options(group: type[Any]) -> list[inspect.Parameter]:
    """The group's options, nested groups' in place, as keyword-only parameters."""
    hints = get_type_hints(group, include_extras=True)
    out: list[inspect.Parameter] = []
    for f in dataclasses.fields(group):
        hint = hints[f.name]
        if _is_group(hint):
            out += _options(hint)
        else:
            kind = inspect.Parameter.KEYWORD_ONLY
            out.append(inspect.Parameter(f.name, kind, default=f.default, annotation=hint))
    return out


def _build(group: type[Any], values: dict[str, Any]) -> Any:
    """The group from the options typer parsed (taken out of `values`)."""
    hints = get_type_hints(group, include_extras=True)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(group):
        hint = hints[f.name]
        fields[f.name] = _build(hint, values) if _is_group(hint) else values.pop(f.name)
    return group(**fields)


def groups(fn: F) -> F:
    """`fn` with each parameter typed by a group replaced by the group's options (for typer);
    called, it gets the group built from them."""
    hints = get_type_hints(fn, include_extras=True)
    params: list[inspect.Parameter] = []
    grouped: dict[str, type[Any]] = {}
    for p in inspect.signature(fn).parameters.values():
        hint = hints.get(p.name, p.annotation)
        if _is_group(hint):
            grouped[p.name] = hint
            params += _options(hint)
        else:
            params.append(p.replace(annotation=hint))
    names = [p.name for p in params]
    clash = {n for n in names if names.count(n) > 1}
    if clash:
        raise TypeError(f"{fn.__name__}: options declared twice: {', '.join(sorted(clash))}")

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, group in grouped.items():
            kwargs[name] = _build(group, kwargs)
        return fn(*args, **kwargs)

    signature = inspect.signature(fn).replace(parameters=params)
    wrapper.__signature__ = signature  # type: ignore[attr-defined]
    wrapper.__annotations__ = _annotations(params, hints)
    return wrapper  # type: ignore[return-value]


def _annotations(params: list[inspect.Parameter], hints: Mapping[str, Any]) -> dict[str, Any]:
    out = {p.name: p.annotation for p in params}
    if "return" in hints:
        out["return"] = hints["return"]
    return out
