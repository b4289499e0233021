"""Bookie registrations and cookies in the metadata store.

Layout (documented in docs/bookie.md):

    /bookies/available/<bookie id>   ephemeral, JSON BookieInfo: state "available" or
                                     "readonly", rack, instance id, data and HTTP address
    /bookies/cookies/<bookie id>     persistent, JSON: the instance id and directories of
                                     the bookie's data, written at its first registration

One key per bookie with the state in its value: a switch to read-only is one
atomic put, so a bookie is never listed twice or missing in between. The keys
live outside /ledgers, whose children are ledger ids only.

The ledger client lists bookies with `list_bookies` / `writable_bookies`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import logging
import pathlib
from collections.abc import Sequence

from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import errors as metadata_errors

from pulsar_bookie import errors, types
from pulsar_bookie.client.replicated import placement
from pulsar_bookie.storage import cookie as storage_cookie

log = logging.getLogger(__name__)

BOOKIES_PATH = "/bookies"
AVAILABLE_PATH = f"{BOOKIES_PATH}/available"
COOKIES_PATH = f"{BOOKIES_PATH}/cookies"


class BookieState(enum.Enum):
    AVAILABLE = "available"
    READ_ONLY = "readonly"


@dataclasses.dataclass(frozen=True, kw_only=True)
class BookieInfo:
    """What a bookie tells the cluster about itself."""

    bookie_id: types.BookieId
    state: BookieState
    #: host:port of the bookie protocol (equal to bookie_id unless bookieId was set).
    address: str
    http_address: str = ""
    rack: str = ""
    instance_id: str = ""

    @property
    def writable(self) -> bool:
        return self.state is BookieState.AVAILABLE

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "bookieId": self.bookie_id,
                "state": self.state.value,
                "address": self.address,
                "httpAddress": self.http_address,
                "rack": self.rack,
                "instanceId": self.instance_id,
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> BookieInfo:
        record = json.loads(data)
        return cls(
            bookie_id=types.BookieId(record["bookieId"]),
            state=BookieState(record["state"]),
            address=record.get("address") or record["bookieId"],
            http_address=record.get("httpAddress", ""),
            rack=record.get("rack", ""),
            instance_id=record.get("instanceId", ""),
        )


def available_path(bookie_id: str) -> str:
    return f"{AVAILABLE_PATH}/{bookie_id}"


def cookie_path(bookie_id: str) -> str:
    return f"{COOKIES_PATH}/{bookie_id}"


async def list_bookies(store: metadata_api.MetadataStore) -> list[BookieInfo]:
    """Every registered bookie (writable and read-only), sorted by id."""
    found = []
    for name in await store.get_children(AVAILABLE_PATH):
        result = await store.get(available_path(name))
        if result is None:
            continue  # vanished between the listing and the read
        try:
            found.append(BookieInfo.from_json(result.value))
        except (ValueError, KeyError) as exc:
            log.warning("ignoring unreadable registration of bookie %s: %s", name, exc)
    return found


class RegisteredBookieSource:
    """The ledger client's placement.BookieSource over the registrations in a store."""

    def __init__(self, store: metadata_api.MetadataStore) -> None:
        self._store = store

    async def bookies(self) -> list[placement.BookieInfo]:
        return [placement.BookieInfo(b.bookie_id, b.rack, b.writable)
                for b in await list_bookies(self._store)]


async def writable_bookies(store: metadata_api.MetadataStore) -> list[BookieInfo]:
    """Registered bookies that take adds (the candidates for a new ensemble)."""
    return [info for info in await list_bookies(store) if info.writable]


class Registration:
    """The ephemeral registration of one running bookie; re-created after a session loss."""

    def __init__(self, store: metadata_api.MetadataStore, info: BookieInfo) -> None:
        self._store = store
        self.info = info
        self._registered = False
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        store.register_session_listener(self._on_session_event)

    async def register(self) -> None:
        """Publish the registration (replacing one a crashed earlier run left behind)."""
        async with self._lock:
            await self._store.put(
                available_path(self.info.bookie_id), self.info.to_json(), ephemeral=True
            )
            self._registered = True
        log.info("registered bookie %s as %s", self.info.bookie_id, self.info.state.value)

    async def set_state(self, state: BookieState) -> None:
        self.info = dataclasses.replace(self.info, state=state)
        if self._registered:
            await self.register()

    async def unregister(self) -> None:
        async with self._lock:
            self._registered = False
            try:
                await self._store.delete(available_path(self.info.bookie_id))
            except metadata_errors.NotFoundError:
                pass
        for task in list(self._tasks):
            task.cancel()

    def _on_session_event(self, event: metadata_api.SessionEvent) -> None:
        if event is metadata_api.SessionEvent.SESSION_LOST:
            log.warning("metadata session lost: registration of %s is gone", self.info.bookie_id)
        elif event is metadata_api.SessionEvent.SESSION_REESTABLISHED and self._registered:
            task = asyncio.get_running_loop().create_task(self._reregister())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _reregister(self) -> None:
        try:
            await self.register()
        except metadata_errors.MetadataStoreError as exc:
            log.error("could not re-register bookie %s: %s", self.info.bookie_id, exc)


# ----- cookies -----


def disk_has_cookie(directories: Sequence[str]) -> bool:
    """Whether any data directory holds a cookie (the engine checks they all agree)."""
    return any(
        (pathlib.Path(d) / "current" / storage_cookie.FILE_NAME).exists() for d in directories
    )


async def expected_instance_id(
    store: metadata_api.MetadataStore, bookie_id: str, directories: Sequence[str]
) -> str | None:
    """The instance id the cluster knows this bookie by, None for a bookie new to the cluster.

    Raises CookieMismatchError when the cluster knows the bookie but its
    directories hold no cookie: they were emptied or replaced, and serving
    from them would answer "no such entry" for entries it acknowledged.
    """
    result = await store.get(cookie_path(bookie_id))
    if result is None:
        return None
    try:
        instance_id = str(json.loads(result.value)["instanceId"])
    except (ValueError, KeyError) as exc:
        raise errors.CookieMismatchError(f"unreadable cookie of {bookie_id} in metadata") from exc
    if not disk_has_cookie(directories):
        raise errors.CookieMismatchError(
            f"bookie {bookie_id} is known to the cluster (instance {instance_id}) but its "
            f"data directories hold no cookie: they were emptied or replaced; refusing to start"
        )
    return instance_id


async def store_cookie(
    store: metadata_api.MetadataStore, bookie_id: str, cookie: storage_cookie.Cookie
) -> None:
    """Record a new bookie's cookie (create-only: an existing one is checked, never replaced)."""
    value = json.dumps(
        {
            "instanceId": cookie.instance_id,
            "bookieId": bookie_id,
            "journalDirs": list(cookie.journal_dirs),
            "ledgerDirs": list(cookie.ledger_dirs),
        },
        sort_keys=True,
    ).encode()
    try:
        await store.put(cookie_path(bookie_id), value, metadata_api.VERSION_ABSENT)
    except metadata_errors.AlreadyExistsError:
        known = await expected_instance_id(store, bookie_id, cookie.ledger_dirs)
        if known != cookie.instance_id:
            raise errors.CookieMismatchError(
                f"bookie {bookie_id} is registered with instance {known}, "
                f"its directories hold instance {cookie.instance_id}"
            ) from None
