"""Both metadata backends behind one fixture, so one contract suite runs on each."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from pulsar_common.metadata import api, factory

#: Session timeout of the stores the contract suite opens (etcd lease TTL).
SESSION_TIMEOUT_S = 5.0
#: Generous bound for waiting on an event on a loaded machine.
WAIT_S = 20.0

OpenStore = Callable[..., Awaitable[api.MetadataStore]]


@pytest.fixture(params=["rocksdb", "etcd"])
def store_url(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str:
    if request.param == "rocksdb":
        return f"rocksdb:{tmp_path / 'metadata'}"
    url: str = request.getfixturevalue("etcd_url")
    return url


@pytest.fixture
async def open_store(store_url: str) -> AsyncIterator[OpenStore]:
    """Opens stores (sessions) on the same backend and root; closes them after the test."""
    opened: list[api.MetadataStore] = []

    async def open_one(**options: Any) -> api.MetadataStore:
        options.setdefault("session_timeout_s", SESSION_TIMEOUT_S)
        store = await factory.create_store(store_url, **options)
        opened.append(store)
        return store

    yield open_one
    for store in reversed(opened):
        await store.close()


@pytest.fixture
async def store(open_store: OpenStore) -> api.MetadataStore:
    return await open_store()


async def _next_notification(watch: api.Watch) -> api.Notification:
    return await asyncio.wait_for(anext(aiter(watch)), WAIT_S)


async def _wait_for(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT_S):
        while not condition():
            await asyncio.sleep(0.01)


@pytest.fixture
def next_notification() -> Callable[[api.Watch], Awaitable[api.Notification]]:
    """The watch's next notification; the test fails if none comes in time."""
    return _next_notification


@pytest.fixture
def wait_for() -> Callable[[Callable[[], bool]], Awaitable[None]]:
    """Wait (with a timeout, no fixed sleep) until an in-memory condition holds."""
    return _wait_for
