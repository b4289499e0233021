"""Metadata paths: validation, the chroot prefix a store lives under, and child names.

Both backends keep keys as the UTF-8 bytes of the full path. A store opened
with a chroot ("/tests/t1") stores "/a/b" as "/tests/t1/a/b", so separate
clusters or tests share one etcd without seeing each other's keys.
"""

from __future__ import annotations

from pulsar_common.metadata import errors


def validate(path: str) -> str:
    """path itself when it is absolute, has no empty segment and no trailing '/' (except '/')."""
    if not path.startswith("/"):
        raise errors.InvalidPathError(f"metadata path must start with '/': {path!r}")
    if path != "/" and (path.endswith("/") or "//" in path):
        raise errors.InvalidPathError(f"metadata path has an empty segment: {path!r}")
    return path


def validate_chroot(chroot: str) -> str:
    """'' for no chroot, else a valid path other than '/'."""
    if chroot in ("", "/"):
        return ""
    return validate(chroot)


def children_prefix(path: str) -> str:
    """The prefix every descendant of path starts with."""
    return path if path == "/" else path + "/"


def parent(path: str) -> str | None:
    """The parent of path, None for '/'."""
    if path == "/":
        return None
    head = path.rsplit("/", 1)[0]
    return head or "/"


def child_name(path: str, descendant: str) -> str | None:
    """The first segment of descendant below path, None when it is not below path."""
    prefix = children_prefix(path)
    if not descendant.startswith(prefix) or descendant == prefix:
        return None
    return descendant[len(prefix):].split("/", 1)[0]


def in_scope(path: str, candidate: str, prefix: bool) -> bool:
    """Whether a watch on path (a prefix watch when prefix) sees a change of candidate."""
    if candidate == path:
        return True
    return prefix and candidate.startswith(children_prefix(path))


class Chroot:
    """Maps store paths to backend keys under a fixed root, and back."""

    def __init__(self, chroot: str = "") -> None:
        self.root = validate_chroot(chroot)

    def key(self, path: str) -> bytes:
        validate(path)
        if not self.root:
            return path.encode()
        return (self.root if path == "/" else self.root + path).encode()

    def path(self, key: bytes) -> str | None:
        """The store path of a backend key, None when the key lies outside the chroot."""
        text = key.decode()
        if not self.root:
            return text
        if text == self.root:
            return "/"
        if text.startswith(self.root + "/"):
            return text[len(self.root):]
        return None
