"""The cookie: a marker in every data directory saying which bookie and which directory set it belongs to.

Written as `current/VERSION` in each journal and ledger directory at the first
start on empty directories. Later starts compare every directory's cookie with
the configured set: a directory that lost its cookie (emptied or replaced
disk), a cookie of another bookie, or a changed list of directories makes the
bookie refuse to start, because serving from such directories could answer
"no such entry" for entries this bookie once acknowledged.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import uuid

from pulsar_bookie import errors
from pulsar_bookie.storage import journal

LAYOUT_VERSION = 1
FILE_NAME = "VERSION"


@dataclasses.dataclass(frozen=True)
class Cookie:
    instance_id: str
    bookie_id: str
    journal_dirs: tuple[str, ...]
    ledger_dirs: tuple[str, ...]

    def render(self) -> str:
        return (
            f"layoutVersion={LAYOUT_VERSION}\n"
            f"instanceId={self.instance_id}\n"
            f"bookieId={self.bookie_id}\n"
            f"journalDirs={','.join(self.journal_dirs)}\n"
            f"ledgerDirs={','.join(self.ledger_dirs)}\n"
        )

    @classmethod
    def parse(cls, text: str, where: pathlib.Path) -> Cookie:
        fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        try:
            return cls(
                fields["instanceId"],
                fields.get("bookieId", ""),
                tuple(d for d in fields["journalDirs"].split(",") if d),
                tuple(d for d in fields["ledgerDirs"].split(",") if d),
            )
        except KeyError as exc:
            raise errors.CookieMismatchError(f"{where}: unreadable cookie") from exc


def _current(directory: pathlib.Path) -> pathlib.Path:
    return directory / "current"


def _is_empty(directory: pathlib.Path) -> bool:
    current = _current(directory)
    return not current.exists() or not any(current.iterdir())


def _write(directory: pathlib.Path, cookie: Cookie) -> None:
    current = _current(directory)
    current.mkdir(parents=True, exist_ok=True)
    tmp = current / (FILE_NAME + ".tmp")
    with open(tmp, "w") as f:
        f.write(cookie.render())
        f.flush()
        os.fsync(f.fileno())
    tmp.rename(current / FILE_NAME)
    journal.fsync_directory(current)


def check_or_create(
    journal_dirs: list[pathlib.Path],
    ledger_dirs: list[pathlib.Path],
    bookie_id: str = "",
    expected_instance_id: str | None = None,
) -> Cookie:
    """The bookie's cookie; creates it on all-empty directories, else verifies every directory.

    Raises CookieMismatchError when a directory is emptied, foreign, or the set changed.
    """
    wanted = Cookie(
        expected_instance_id or "",
        bookie_id,
        tuple(str(d.resolve()) for d in journal_dirs),
        tuple(str(d.resolve()) for d in ledger_dirs),
    )
    all_dirs = journal_dirs + ledger_dirs
    found: dict[pathlib.Path, Cookie] = {}
    for directory in all_dirs:
        path = _current(directory) / FILE_NAME
        if path.exists():
            found[directory] = Cookie.parse(path.read_text(), path)
    if not found:
        non_empty = [str(d) for d in all_dirs if not _is_empty(d)]
        if non_empty:
            raise errors.CookieMismatchError(f"directories hold data but no cookie: {non_empty}")
        cookie = dataclasses.replace(wanted, instance_id=expected_instance_id or uuid.uuid4().hex)
        for directory in all_dirs:
            _write(directory, cookie)
        return cookie
    missing = [str(d) for d in all_dirs if d not in found]
    if missing:
        raise errors.CookieMismatchError(f"cookie missing (directory emptied or new): {missing}")
    cookies = set(found.values())
    if len(cookies) != 1:
        raise errors.CookieMismatchError(
            f"directories belong to different bookies: {sorted(map(str, found))}"
        )
    cookie = cookies.pop()
    _verify(cookie, wanted, expected_instance_id)
    return cookie


def _verify(cookie: Cookie, wanted: Cookie, expected_instance_id: str | None) -> None:
    if expected_instance_id is not None and cookie.instance_id != expected_instance_id:
        raise errors.CookieMismatchError(
            f"directories belong to instance {cookie.instance_id}, not {expected_instance_id}"
        )
    if wanted.bookie_id and cookie.bookie_id and cookie.bookie_id != wanted.bookie_id:
        raise errors.CookieMismatchError(f"directories belong to bookie {cookie.bookie_id}")
    if (cookie.journal_dirs, cookie.ledger_dirs) != (wanted.journal_dirs, wanted.ledger_dirs):
        raise errors.CookieMismatchError(
            f"directory set changed: cookie has journal={cookie.journal_dirs} ledgers={cookie.ledger_dirs},"
            f" configured journal={wanted.journal_dirs} ledgers={wanted.ledger_dirs}"
        )
