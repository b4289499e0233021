"""Which broker owns which namespace bundle: ephemeral keys in the metadata store.

A broker owns a bundle while its key `/namespace/<tenant>/<ns>/<range>`
exists, created only if absent and bound to the broker's metadata session,
so exactly one live broker owns a bundle and a dead broker's bundles become
free when its session expires. The value is Apache's NamespaceEphemeralData
(nativeUrl, httpUrl, ...), which is what a lookup answers with.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from typing import Any

from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker.namespace import listeners as advertised
from pulsar_broker.namespace.bundles import NamespaceBundle

log = logging.getLogger(__name__)

OWNERSHIP_ROOT = "/namespace"
#: Attempts to take a bundle whose key vanishes between our create and our read.
ACQUIRE_ATTEMPTS = 3


@dataclasses.dataclass(frozen=True)
class BrokerUrls:
    """Where a broker is reached: binary protocol and HTTP, and its advertised listeners.
    A broker is identified by its URLs; its listeners are what it publishes about them."""

    native_url: str
    http_url: str
    listeners: tuple[advertised.AdvertisedListener, ...] = dataclasses.field(
        default=(), compare=False)
    #: pulsar+ssl:// and https:// URLs when the broker has TLS ports (Apache's nativeUrlTls,
    #: httpUrlTls); not part of the identity.
    native_url_tls: str | None = dataclasses.field(default=None, compare=False)
    http_url_tls: str | None = dataclasses.field(default=None, compare=False)

    def native_url_for(self, listener_name: str | None) -> str:
        """The binary-protocol URL a client asking for listener_name gets (the internal
        one without a name); ListenerNotFoundError when the broker has no such listener."""
        if not listener_name:
            return self.native_url
        url = advertised.select(self.listeners, listener_name).broker_service_url
        if url is None:
            raise advertised.ListenerNotFoundError(listener_name)
        return url

    def native_url_tls_for(self, listener_name: str | None) -> str | None:
        """The pulsar+ssl:// URL for listener_name (the broker's own without a name); None
        when it has none."""
        if not listener_name:
            return self.native_url_tls
        return advertised.select(self.listeners, listener_name).broker_service_url_tls

    def to_json(self) -> dict[str, Any]:
        return {"nativeUrl": self.native_url, "nativeUrlTls": self.native_url_tls,
                "httpUrl": self.http_url, "httpUrlTls": self.http_url_tls, "disabled": False,
                "advertisedListeners": advertised.to_json(self.listeners)}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> BrokerUrls:
        return cls(str(value["nativeUrl"]), str(value["httpUrl"]),
                   advertised.from_json(value.get("advertisedListeners")),
                   value.get("nativeUrlTls") or None, value.get("httpUrlTls") or None)


def ownership_path(bundle: NamespaceBundle) -> str:
    return f"{OWNERSHIP_ROOT}/{bundle.namespace}/{bundle.range}"


class OwnershipCache:
    """This broker's bundles, and reads of other brokers' ownership."""

    def __init__(self, store: md.MetadataStore, me: BrokerUrls) -> None:
        self.store = store
        self.me = me
        self._owned: set[NamespaceBundle] = set()
        #: Acquisitions under way, shared by concurrent lookups of the same bundle (a lookup
        #: that lost the race to create the key would otherwise take the winner's key for one
        #: left by this broker's previous life and delete it). At most one per bundle.
        self._acquiring: dict[NamespaceBundle, asyncio.Future[BrokerUrls]] = {}

    @property
    def owned_bundles(self) -> list[NamespaceBundle]:
        return sorted(self._owned, key=str)

    def owns(self, bundle: NamespaceBundle) -> bool:
        return bundle in self._owned

    async def owner(self, bundle: NamespaceBundle) -> BrokerUrls | None:
        """The bundle's owner as the store says; None when no broker owns it.

        A key naming this broker that this broker did not create is left over
        from its previous life (its session has not expired yet): no owner.
        """
        if bundle in self._owned:
            return self.me
        found = await self.store.get(ownership_path(bundle))
        if found is None:
            return None
        owner = BrokerUrls.from_json(json.loads(found.value))
        return None if owner == self.me else owner

    async def try_acquire(self, bundle: NamespaceBundle) -> BrokerUrls:
        """Take the bundle if no live broker owns it; returns whoever owns it afterwards."""
        if bundle in self._owned:
            return self.me
        pending = self._acquiring.get(bundle)
        if pending is None:
            pending = asyncio.ensure_future(self._acquire(bundle))
            self._acquiring[bundle] = pending
            pending.add_done_callback(lambda _f: self._acquiring.pop(bundle, None))
        return await asyncio.shield(pending)

    async def _acquire(self, bundle: NamespaceBundle) -> BrokerUrls:
        path = ownership_path(bundle)
        for _ in range(ACQUIRE_ATTEMPTS):
            if bundle in self._owned:
                return self.me
            try:
                await self.store.put(path, json.dumps(self.me.to_json()).encode(),
                                     md.VERSION_ABSENT, ephemeral=True)
            except md_errors.AlreadyExistsError:
                found = await self.store.get(path)
                if found is None:
                    continue
                owner = BrokerUrls.from_json(json.loads(found.value))
                if owner != self.me:
                    return owner
                # Our own key from before a restart: remove it and take the bundle anew.
                try:
                    await self.store.delete(path, found.stat.version)
                except (md_errors.BadVersionError, md_errors.NotFoundError):
                    pass
                continue
            self._owned.add(bundle)
            log.info("acquired ownership of bundle %s", bundle)
            return self.me
        found = await self.store.get(path)
        if found is None:
            raise md_errors.StoreUnavailableError(f"could not take ownership of bundle {bundle}")
        return BrokerUrls.from_json(json.loads(found.value))

    async def release(self, bundle: NamespaceBundle) -> None:
        if bundle not in self._owned:
            return
        self._owned.discard(bundle)
        try:
            await self.store.delete(ownership_path(bundle))
        except md_errors.NotFoundError:
            pass
        log.info("released ownership of bundle %s", bundle)

    def forget_all(self) -> list[NamespaceBundle]:
        """After the session was lost the keys are gone: stop believing we own anything."""
        lost = sorted(self._owned, key=str)
        self._owned.clear()
        return lost

    async def count_by_owner(self) -> dict[BrokerUrls, int]:
        """How many bundles each broker owns, for choosing where a new bundle goes."""
        counts: dict[BrokerUrls, int] = {}
        for tenant in await self.store.get_children(OWNERSHIP_ROOT):
            for ns in await self.store.get_children(f"{OWNERSHIP_ROOT}/{tenant}"):
                base = f"{OWNERSHIP_ROOT}/{tenant}/{ns}"
                for bundle_range in await self.store.get_children(base):
                    found = await self.store.get(f"{base}/{bundle_range}")
                    if found is not None:
                        owner = BrokerUrls.from_json(json.loads(found.value))
                        counts[owner] = counts.get(owner, 0) + 1
        return counts
