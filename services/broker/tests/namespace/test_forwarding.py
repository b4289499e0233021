"""Requests to other brokers go through the injected HTTP port: what each answer becomes."""

from __future__ import annotations

import json
import pathlib
from collections.abc import AsyncIterator, Mapping

import pytest
from pulsar_broker import errors, resources
from pulsar_broker.namespace import forwarding
from pulsar_broker.namespace.ownership import BrokerUrls
from pulsar_broker.namespace.service import NamespaceService
from pulsar_common import naming
from pulsar_common.metadata import factory

ME = BrokerUrls("pulsar://a:6650", "http://a:8080")
OTHER = BrokerUrls("pulsar://b:6650", "http://b:8080")


class ScriptedHttp:
    """Answers every request with one reply, or raises one error; records the requests."""

    def __init__(self, answer: forwarding.Reply | BaseException) -> None:
        self.answer = answer
        self.requests: list[tuple[str, str, bytes | None, dict[str, str], bool]] = []
        self.closed = False

    async def request(self, method: str, url: str, *, body: bytes | None = None,
                      params: Mapping[str, str] | None = None,
                      follow_redirects: bool = True) -> forwarding.Reply:
        self.requests.append((method, url, body, dict(params or {}), follow_redirects))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
async def store_resources(tmp_path: pathlib.Path) -> AsyncIterator[resources.PulsarResources]:
    store = await factory.create_store(f"rocksdb:{tmp_path / 'metadata'}")
    yield resources.PulsarResources(store)
    await store.close()


def _service(pulsar_resources: resources.PulsarResources, http: ScriptedHttp) -> NamespaceService:
    return NamespaceService(pulsar_resources, ME, broker_id="a:8080", cluster="local",
                            version="test", http=http)


async def test_a_forwarded_request_sends_the_path_to_the_other_broker(store_resources):
    http = ScriptedHttp(forwarding.Reply(204, b""))
    await _service(store_resources, http).forward("PUT", OTHER, "/admin/v2/x")
    assert http.requests == [("PUT", "http://b:8080/admin/v2/x", None, {}, True)]


async def test_a_forwarded_request_answered_with_an_error_status_fails(store_resources):
    http = ScriptedHttp(forwarding.Reply(409, b"busy"))
    with pytest.raises(errors.BrokerError, match="PUT /admin/v2/x on http://b:8080 answered 409: busy"):
        await _service(store_resources, http).forward("PUT", OTHER, "/admin/v2/x")


async def test_a_request_nobody_answers_is_service_not_ready_chained_to_the_cause(store_resources):
    cause = ConnectionRefusedError("refused")
    http = ScriptedHttp(forwarding.BrokerUnreachableError(cause))
    with pytest.raises(errors.ServiceNotReadyError, match="did not answer GET /x") as raised:
        await _service(store_resources, http).call("GET", OTHER, "/x")
    assert raised.value.__cause__ is cause


async def test_a_bundle_is_offered_by_an_authoritative_lookup_that_follows_no_redirect(
        store_resources):
    answer = {"brokerUrl": OTHER.native_url, "httpUrl": OTHER.http_url}
    http = ScriptedHttp(forwarding.Reply(200, json.dumps(answer).encode()))
    topic = naming.TopicName.parse("persistent://public/default/t")
    assert await _service(store_resources, http)._ask_to_take(OTHER, topic) == OTHER
    assert http.requests == [("GET", "http://b:8080/lookup/v2/topic/persistent/public/default/t",
                              None, {"authoritative": "true"}, False)]


@pytest.mark.parametrize("answer", [
    forwarding.BrokerUnreachableError(TimeoutError()), forwarding.Reply(503, b""),
    forwarding.Reply(200, b"not json"),
])
async def test_a_lookup_the_other_broker_does_not_answer_leaves_the_bundle_here(
        store_resources, answer):
    topic = naming.TopicName.parse("persistent://public/default/t")
    assert await _service(store_resources, ScriptedHttp(answer))._ask_to_take(OTHER, topic) is None


async def test_closing_the_namespace_service_closes_its_http_client(store_resources):
    http = ScriptedHttp(forwarding.Reply(200, b""))
    await _service(store_resources, http).close()
    assert http.closed
