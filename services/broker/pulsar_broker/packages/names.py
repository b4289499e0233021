"""Package names, `type://tenant/namespace/name@version`, parsed and checked as Apache does.

The type is function, sink or source; every other part is one non-empty path
segment (no '/', '\\', NUL, '.' or '..'); a missing version means `latest`.
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import enum

from pulsar_broker.packages import errors


class PackageType(enum.Enum):
    FUNCTION = "function"
    SINK = "sink"
    SOURCE = "source"

    @classmethod
    def of(cls, text: str) -> PackageType:
        try:
            return cls(text.lower())
        except ValueError as exc:
            raise errors.InvalidPackageNameError(
                f"Invalid package type '{text}', it should be function, sink, or source") \
                from exc


LATEST = "latest"


@dataclasses.dataclass(frozen=True)
class PackageName:
    type: PackageType
    tenant: str
    namespace: str
    name: str
    version: str

    @classmethod
    def of(cls, type_: str, tenant: str, namespace: str, name: str,
           version: str = LATEST) -> PackageName:
        full = f"{type_}://{tenant}/{namespace}/{name}@{version}"
        return cls(PackageType.of(type_), _part(full, "tenant", tenant),
                   _part(full, "namespace", namespace), _part(full, "name", name),
                   _part(full, "version", version or LATEST))

    @classmethod
    def parse(cls, url: str) -> PackageName:
        """`type://tenant/namespace/name[@version]`."""
        type_, separator, rest = url.partition("://")
        if not separator:
            raise errors.InvalidPackageNameError(f"Invalid package name '{url}'")
        path, _, version = rest.partition("@")
        parts = path.split("/")
        if len(parts) != 3 or "@" in version:
            raise errors.InvalidPackageNameError(f"Invalid package name '{url}'")
        return cls.of(type_, parts[0], parts[1], parts[2], version or LATEST)

    def __str__(self) -> str:
        return (f"{self.type.value}://{self.tenant}/{self.namespace}/{self.name}"
                f"@{self.version}")

    @property
    def rest_path(self) -> str:
        """The path under /admin/v3/packages."""
        return f"{self.type.value}/{self.tenant}/{self.namespace}/{self.name}/{self.version}"


def is_package_url(location: str) -> bool:
    return location.partition("://")[0].lower() in {t.value for t in PackageType}


def check_part(what: str, value: str) -> str:
    if not value or value in (".", "..") or any(c in value for c in "/\\\0"):
        raise errors.InvalidPackageNameError(f"Invalid package {what} '{value}'")
    return value


def _part(full: str, what: str, value: str) -> str:
    try:
        return check_part(what, value)
    except errors.InvalidPackageNameError as exc:
        raise errors.InvalidPackageNameError(f"{exc} in package name '{full}'") from None
