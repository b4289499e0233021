"""Reading configuration in Apache's `key=value` style (broker.conf, bookkeeper.conf).

Each service declares its settings as a frozen dataclass whose fields carry the
Apache key name in their metadata; `load` fills it from a file and from
`--conf key=value` overrides given on the command line.
"""

from __future__ import annotations

import dataclasses
import pathlib
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pulsar_common import errors

T = TypeVar("T")


def setting(key: str, default: Any, doc: str = "") -> Any:
    """A dataclass field read from the Apache key `key`."""
    return dataclasses.field(default=default, metadata={"key": key, "doc": doc})


def read_properties(text: str) -> dict[str, str]:
    """Parse `key=value` lines; '#' starts a comment line, blank lines are skipped."""
    result: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise errors.ConfigError(f"line {number}: expected key=value, got {raw!r}")
        result[key.strip()] = value.strip()
    return result


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """`["a=1", "b=x"]` from repeated `--conf` options."""
    return read_properties("\n".join(pairs))


def _convert(key: str, raw: str, kind: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        if raw == "":
            return None
        return _convert(key, raw, inner[0])
    try:
        if kind is bool:
            lowered = raw.lower()
            if lowered not in ("true", "false"):
                raise ValueError(raw)
            return lowered == "true"
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
        if origin is tuple:
            return tuple(part.strip() for part in raw.split(",") if part.strip())
    except ValueError as exc:
        raise errors.ConfigError(f"{key}: cannot read {raw!r} as {kind}") from exc
    return raw


def keys_of(cls: type[Any]) -> dict[str, dataclasses.Field[Any]]:
    return {f.metadata.get("key", f.name): f for f in dataclasses.fields(cls)}


def load(
    cls: type[T],
    path: str | pathlib.Path | None = None,
    overrides: Mapping[str, str] | None = None,
    *,
    strict: bool = False,
) -> T:
    """Build cls from a properties file and overrides (overrides win).

    Unknown keys are ignored (Apache's files carry many settings we do not
    implement) unless strict is set; keys given as overrides must be known.
    """
    values: dict[str, str] = {}
    if path is not None:
        values.update(read_properties(pathlib.Path(path).read_text()))
    known = keys_of(cls)
    hints = typing.get_type_hints(cls)
    for key in overrides or {}:
        if key not in known:
            raise errors.ConfigError(f"unknown setting {key!r}")
    values.update(overrides or {})
    kwargs: dict[str, Any] = {}
    for key, raw in values.items():
        f = known.get(key)
        if f is None:
            if strict:
                raise errors.ConfigError(f"unknown setting {key!r}")
            continue
        kwargs[f.name] = _convert(key, raw, hints[f.name])
    return cls(**kwargs)


def load_many(
    classes: Iterable[type[Any]],
    path: str | pathlib.Path | None = None,
    overrides: Mapping[str, str] | None = None,
) -> list[Any]:
    """Load several settings classes from one file (as `pulsar standalone` reads broker,
    managed-ledger and bookie keys from one broker.conf); each override must be known
    to at least one of them."""
    classes = list(classes)
    overrides = dict(overrides or {})
    known = [keys_of(cls) for cls in classes]
    for key in overrides:
        if not any(key in keys for keys in known):
            raise errors.ConfigError(f"unknown setting {key!r}")
    return [
        load(cls, path, {k: v for k, v in overrides.items() if k in keys})
        for cls, keys in zip(classes, known)
    ]


def render(settings: Any) -> str:
    """The settings as a properties file (for ConfigMaps and `--help` output)."""
    lines = []
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, tuple):
            text = ",".join(map(str, value))
        elif value is None:
            text = ""
        else:
            text = str(value)
        if f.metadata.get("doc"):
            lines.append(f"# {f.metadata['doc']}")
        lines.append(f"{f.metadata.get('key', f.name)}={text}")
    return "\n".join(lines) + "\n"
