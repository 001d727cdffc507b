"""Kubernetes label selectors, as `kubectl get -l` takes them: `key=value`, `key==value`,
`key!=value`, `key in (a,b)`, `key notin (a,b)`, `key` (exists) and `!key` (does not exist),
comma-separated and all required.

The CLI parses the selector itself so that bad input is one line and the same requirements match
both sources alike: live runs through the API (`labelSelector`, the canonical text of what was
parsed) and archived runs against their stored `metadata.labels`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# apimachinery's validation: a qualified name (optional DNS-subdomain prefix) for keys; values are
# empty or a name part.
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_NAME_RE = re.compile(rf"^{_NAME}$")
_PREFIX_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# One token at a time: identifiers (keys, values, the words in/notin), operators, parentheses.
_TOKEN_RE = re.compile(r"\s*(==|!=|=|!|,|\(|\)|<|>|[^\s=!,()<>]+)")
_OPERATORS = ("==", "!=", "=", "!", ",", "(", ")", "<", ">")


class SelectorError(ValueError):
    """A selector that is not valid; str() is one line for the user."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if self.operator in ("=", "in"):
            return present and value in self.values
        return not present or value not in self.values  # "!=" and "notin", as Kubernetes

    def __str__(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!":
            return f"!{self.key}"
        if self.operator in ("=", "!="):
            return f"{self.key}{self.operator}{self.values[0]}"
        return f"{self.key} {self.operator} ({','.join(self.values)})"


@dataclass(frozen=True)
class Selector:
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return all(r.matches(labels or {}) for r in self.requirements)

    def __str__(self) -> str:
        """The canonical text, what the API receives as labelSelector."""
        return ",".join(str(r) for r in self.requirements)

    def __bool__(self) -> bool:
        return bool(self.requirements)


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN_RE.match(text, pos)
        if m is None:  # pragma: no cover - the pattern matches any non-blank character
            raise SelectorError(f"unexpected {text[pos:]!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _key(token: str | None) -> str:
    if token is None or token in _OPERATORS:
        raise SelectorError(f"expected a label key, found {token or 'the end'!r}")
    prefix, slash, name = token.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _PREFIX_RE.match(prefix)):
        raise SelectorError(f"invalid label key {token!r}: the prefix must be a DNS subdomain")
    if len(name) > 63 or not _NAME_RE.match(name):
        raise SelectorError(
            f"invalid label key {token!r}: at most 63 of A-Z a-z 0-9 - _ . "
            "starting and ending alphanumeric"
        )
    return token


def _value(token: str, key: str) -> str:
    if token in _OPERATORS:
        raise SelectorError(f"expected a value for {key!r}, found {token!r}")
    if len(token) > 63 or not _NAME_RE.match(token):
        raise SelectorError(
            f"invalid value {token!r} for {key!r}: at most 63 of A-Z a-z 0-9 - _ . "
            "starting and ending alphanumeric"
        )
    return token


def parse(text: str) -> Selector:
    """The requirements of `text`; an empty text selects everything. Raises SelectorError."""
    try:
        return Selector(tuple(_parse(text)))
    except SelectorError as exc:
        raise SelectorError(f"label selector {text!r}: {exc}") from None


def _parse(text: str) -> list[Requirement]:
    parser = _Parser(_tokens(text))
    requirements = []
    while not parser.done():
        requirements.append(parser.requirement())
        if parser.done():
            break
        if parser.take() != ",":
            raise SelectorError(f"expected ',' before {parser.tokens[parser.pos - 1]!r}")
        if parser.done():
            raise SelectorError("trailing ','")
    return requirements


class _Parser:
    """Recursive descent over the tokens: requirement (',' requirement)*."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def done(self) -> bool:
        return self.pos >= len(self.tokens)

    def peek(self) -> str | None:
        return None if self.done() else self.tokens[self.pos]

    def take(self) -> str | None:
        got = self.peek()
        self.pos += 1
        return got

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            return Requirement(_key(self.take()), "!")
        key = _key(self.take())
        op = self.peek()
        if op is None or op == ",":
            return Requirement(key, "exists")
        self.take()
        if op in ("=", "==", "!="):
            # `key=` (nothing before the next ',') selects the empty value, as Kubernetes.
            empty = self.peek() in (None, ",")
            value = "" if empty else _value(self.take() or "", key)
            return Requirement(key, "!=" if op == "!=" else "=", (value,))
        if op in ("in", "notin"):
            return Requirement(key, op, self.values(key, op))
        raise SelectorError(
            f"unsupported operator {op!r} after {key!r} "
            "(use =, ==, !=, in (...), notin (...), KEY or !KEY)"
        )

    def values(self, key: str, op: str) -> tuple[str, ...]:
        if self.take() != "(":
            raise SelectorError(f"expected '(' after {key} {op}")
        if self.peek() == ")":
            raise SelectorError(f"{key} {op} (): needs at least one value")
        values = set()
        while True:
            item = self.take()
            if item is None:
                raise SelectorError("missing ')'")
            values.add(_value(item, key))
            closing = self.take()
            if closing == ")":
                return tuple(sorted(values))
            if closing != ",":
                raise SelectorError(f"expected ',' or ')' in the values of {key}")
