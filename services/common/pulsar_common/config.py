"""Reading configuration in Apache's `key=value` style (broker.conf, bookkeeper.conf).

Each service declares its settings as a frozen dataclass whose fields carry the
Apache key name in their metadata; `load` fills it from a file, then from the
environment, then from `--conf key=value` overrides given on the command line.

Apache's rules, so its stock files and images work unchanged:
- a file is Java properties: `#`/`!` comments, `key=value`, `key: value` or
  `key value`, white space around keys and values ignored, a trailing `\\`
  continues the value on the next line;
- an empty value (`advertisedAddress=`) means "not set": the default applies,
  except for settings declared `empty_is_none` such as the plain ports, which it
  turns off (`brokerServicePort=` with `brokerServicePortTls=6651`: TLS only);
- the environment overrides the file: `PULSAR_PREFIX_<key>=value` sets any key,
  and a variable named exactly like a known key sets that key (what Apache's
  images do with `apply-config-from-env.py`);
- keys this service does not implement are ignored, with one warning that
  names them all.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pathlib
import re
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pulsar_common import errors

T = TypeVar("T")
log = logging.getLogger(__name__)

#: Environment variables named PULSAR_PREFIX_<key> set <key>, as in Apache's images.
ENV_PREFIX = "PULSAR_PREFIX_"
_SEPARATOR = re.compile(r"\s*[=:]\s*|\s+")


def setting(key: str, default: Any, doc: str = "", *, empty_is_none: bool = False) -> Any:
    """A dataclass field read from the Apache key `key`. With empty_is_none, an empty value
    sets None instead of keeping the default (Apache's `brokerServicePort=` turns the plain
    port off)."""
    return dataclasses.field(default=default, metadata={"key": key, "doc": doc,
                                                        "empty_is_none": empty_is_none})


def read_properties(text: str) -> dict[str, str]:
    """Parse Java properties text (see the module docstring for the rules we follow)."""
    result: dict[str, str] = {}
    lines = iter(enumerate(text.splitlines(), start=1))
    for number, raw in lines:
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        while line.endswith("\\") and not line.endswith("\\\\"):
            following = next(lines, None)
            line = line[:-1] + ("" if following is None else following[1].strip())
        match = _SEPARATOR.search(line)
        if match is None:
            key, value = line, ""
        else:
            key, value = line[:match.start()], line[match.end():]
        if not key:
            raise errors.ConfigError(f"line {number}: no key in {raw!r}")
        result[key] = value.strip()
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


def from_environment(known: Iterable[str],
                     environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Settings the environment gives: PULSAR_PREFIX_<key> for any key, and variables named
    exactly like a known key."""
    env = os.environ if environ is None else environ
    found = {name[len(ENV_PREFIX):]: value for name, value in env.items()
             if name.startswith(ENV_PREFIX) and len(name) > len(ENV_PREFIX)}
    for key in known:
        if key in env and key not in found:
            found[key] = env[key]
    return found


def _gather(path: str | pathlib.Path | None, known: Iterable[str],
            environ: Mapping[str, str] | None) -> dict[str, str]:
    values: dict[str, str] = {}
    if path is not None:
        values.update(read_properties(pathlib.Path(path).read_text()))
    values.update(from_environment(known, environ))
    return values


def _warn_unknown(keys: Iterable[str], where: str | pathlib.Path | None) -> None:
    unknown = sorted(keys)
    if unknown:
        log.warning("ignoring %d setting(s) this service does not implement (%s): %s",
                    len(unknown), where or "environment", ", ".join(unknown))


def _build(cls: type[T], values: Mapping[str, str]) -> T:
    known = keys_of(cls)
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for key, raw in values.items():
        f = known.get(key)
        if f is not None and raw == "" and f.metadata.get("empty_is_none"):
            kwargs[f.name] = None
            continue
        if f is None or raw == "":  # empty means "not set": the default applies
            continue
        kwargs[f.name] = _convert(key, raw, hints[f.name])
    return cls(**kwargs)


def _check_overrides(overrides: Mapping[str, str], known: list[dict[str, Any]]) -> None:
    for key in overrides:
        if not any(key in keys for keys in known):
            raise errors.ConfigError(f"unknown setting {key!r}")


def load(
    cls: type[T],
    path: str | pathlib.Path | None = None,
    overrides: Mapping[str, str] | None = None,
    *,
    strict: bool = False,
    environ: Mapping[str, str] | None = None,
) -> T:
    """Build cls from a properties file, the environment and overrides (overrides win).

    Unknown keys are ignored with a warning (Apache's files carry many settings we
    do not implement) unless strict is set; keys given as overrides must be known.
    """
    known = keys_of(cls)
    _check_overrides(overrides or {}, [known])
    values = _gather(path, known, environ)
    unknown = [key for key in values if key not in known]
    if unknown and strict:
        raise errors.ConfigError(f"unknown setting {unknown[0]!r}")
    _warn_unknown(unknown, path)
    values.update(overrides or {})
    return _build(cls, values)


def load_many(
    classes: Iterable[type[Any]],
    path: str | pathlib.Path | None = None,
    overrides: Mapping[str, str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> list[Any]:
    """Load several settings classes from one file (as `pulsar standalone` reads broker,
    managed-ledger and bookie keys from one broker.conf); each override must be known
    to at least one of them."""
    classes = list(classes)
    known = [keys_of(cls) for cls in classes]
    _check_overrides(overrides or {}, known)
    all_keys = {key for keys in known for key in keys}
    values = _gather(path, all_keys, environ)
    _warn_unknown((key for key in values if key not in all_keys), path)
    values.update(overrides or {})
    return [_build(cls, values) for cls in classes]


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
