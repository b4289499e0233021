"""Where `context.get_secret(name)` finds a secret: the configured secrets provider.

The function's secrets map names each secret and says where it is; what the
value means depends on the provider, as in Apache's instance:
environment (the default, what the operator's pods use): the value is the
name of an environment variable (`PULSAR_SECRET_<NAME>` when the map gives
none); cleartext: the value is the secret; file: the secret is the file
<secrets dir>/<name> (a mounted Kubernetes Secret).
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Mapping
from typing import Any, Protocol

PROVIDERS = ("environment", "cleartext", "file")
_ENV_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


class SecretsProvider(Protocol):
    def secret(self, name: str) -> str | None: ...


def default_env_name(name: str) -> str:
    return "PULSAR_SECRET_" + _ENV_UNSAFE.sub("_", name).upper()


class EnvironmentSecretsProvider:
    def __init__(self, secrets: Mapping[str, Any],
                 environ: Mapping[str, str] | None = None) -> None:
        self._secrets = secrets
        self._environ = os.environ if environ is None else environ

    def secret(self, name: str) -> str | None:
        where = self._secrets.get(name)
        env_name = where if isinstance(where, str) and where else default_env_name(name)
        return self._environ.get(env_name)


class ClearTextSecretsProvider:
    def __init__(self, secrets: Mapping[str, Any]) -> None:
        self._secrets = secrets

    def secret(self, name: str) -> str | None:
        value = self._secrets.get(name)
        return None if value is None else str(value)


class FileSecretsProvider:
    def __init__(self, directory: pathlib.Path) -> None:
        self._directory = directory

    def secret(self, name: str) -> str | None:
        path = self._directory / name
        if "/" in name or name in ("", ".", "..") or not path.is_file():
            return None
        return path.read_text().rstrip("\n")


def provider(kind: str, secrets: Mapping[str, Any],
             directory: pathlib.Path | None = None) -> SecretsProvider:
    if kind == "cleartext":
        return ClearTextSecretsProvider(secrets)
    if kind == "file":
        return FileSecretsProvider(directory or pathlib.Path("/pulsar/secrets"))
    return EnvironmentSecretsProvider(secrets)
