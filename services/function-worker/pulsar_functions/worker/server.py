"""A running functions worker: its metadata store session, the worker itself and its REST
listener, started and stopped together.

`pulsar functions-worker` runs one on its own; `pulsar standalone` runs one
inside the broker process over the standalone's own metadata store, on an
ephemeral port (brokers reach it through its registration and forward
`/admin/v3/functions` to it, so users keep using the broker's web port).
"""

from __future__ import annotations

import dataclasses
import socket

from aiohttp import web
from pulsar_common.metadata import api as md
from pulsar_common.metadata import factory

from pulsar_functions.worker import config, rest, service, topic_calls


class WorkerServer:
    def __init__(self, conf: config.WorkerConfig, store: md.MetadataStore | None = None) -> None:
        """store: a metadata store to share (kept open on stop); None opens the configured one."""
        self.conf = conf
        self._shared_store = store
        self._store: md.MetadataStore | None = store
        self.worker: service.FunctionsWorker | None = None
        self._calls: topic_calls.TopicCalls | None = None
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.conf.worker_hostname}:{self.conf.worker_port}"

    async def start(self) -> None:
        # An unusable brokerClientAuthentication* pair stops start-up (ConfigError).
        _ = self.conf.broker_client_settings.credentials
        # The listening socket first: with workerPort=0 the port it got is the one the
        # worker registers, so brokers can find it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.conf.bind_address, self.conf.worker_port))
        self.conf = dataclasses.replace(self.conf, worker_port=sock.getsockname()[1])
        if self._store is None:
            self._store = await factory.create_store(
                self.conf.metadata_store_url,
                session_timeout_s=self.conf.session_timeout_ms / 1000)
        self.worker = service.FunctionsWorker(self.conf, self._store)
        await self.worker.start()
        self._calls = topic_calls.TopicCalls(self.conf.pulsar_service_url,
                                             self.conf.broker_client_settings)
        self._runner = web.AppRunner(rest.build_app(self.worker, self._calls), access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self.worker is not None:
            await self.worker.stop()
        if self._calls is not None:
            self._calls.close()
        if self._store is not None and self._shared_store is None:
            await self._store.close()
