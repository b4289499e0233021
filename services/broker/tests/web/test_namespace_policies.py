"""Namespace limit and rate policies: Apache's REST paths and `pulsar-admin namespaces` flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from pulsar_broker import testing as broker_testing

if TYPE_CHECKING:
    from conftest import Http


def admin(web_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pulsar_client_tools.admin.main", *args],
                          env={**os.environ, "PULSAR_ADMIN_URL": web_url},
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def namespace(http: Http, unique: str) -> str:
    name = f"public/policies-{unique}"
    assert http.put(f"/admin/v2/namespaces/{name}").status == 204
    return name


@pytest.mark.parametrize(("command", "flag", "path"), [
    ("max-producers-per-topic", "-p", "maxProducersPerTopic"),
    ("max-consumers-per-topic", "-c", "maxConsumersPerTopic"),
    ("max-consumers-per-subscription", "-c", "maxConsumersPerSubscription"),
    ("max-unacked-messages-per-consumer", "-c", "maxUnackedMessagesPerConsumer"),
    ("max-unacked-messages-per-subscription", "-c", "maxUnackedMessagesPerSubscription"),
    ("max-subscriptions-per-topic", "-m", "maxSubscriptionsPerTopic"),
    ("max-topics-per-namespace", "-t", "maxTopicsPerNamespace"),
])
def test_limits_set_get_remove_through_the_cli_and_rest(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str,
        command: str, flag: str, path: str) -> None:
    url = standalone.web_url
    assert admin(url, "namespaces", f"set-{command}", namespace, flag, "7").returncode == 0
    assert http.get(f"/admin/v2/namespaces/{namespace}/{path}").json() == 7
    got = admin(url, "namespaces", f"get-{command}", namespace)
    assert got.returncode == 0 and json.loads(got.stdout) == 7
    assert admin(url, "namespaces", f"remove-{command}", namespace).returncode == 0
    assert http.get(f"/admin/v2/namespaces/{namespace}/{path}").status == 204


def test_rates_are_stored_with_apaches_field_names(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str) -> None:
    url = standalone.web_url
    assert admin(url, "namespaces", "set-publish-rate", namespace, "-m", "1000",
                 "-b", "1048576").returncode == 0
    assert http.get(f"/admin/v2/namespaces/{namespace}/publishRate").json() == {
        "publishThrottlingRateInMsg": 1000, "publishThrottlingRateInByte": 1048576}
    assert admin(url, "namespaces", "set-dispatch-rate", namespace, "-md", "50", "-dt", "2",
                 "-rp").returncode == 0
    assert http.get(f"/admin/v2/namespaces/{namespace}/dispatchRate").json() == {
        "dispatchThrottlingRateInMsg": 50, "dispatchThrottlingRateInByte": -1,
        "ratePeriodInSecond": 2, "relativeToPublishRate": True}
    assert admin(url, "namespaces", "set-subscribe-rate", namespace, "-sr", "5").returncode == 0
    assert http.get(f"/admin/v2/namespaces/{namespace}/subscribeRate").json() == {
        "subscribeThrottlingRatePerConsumer": 5, "ratePeriodInSecond": 30}
    assert admin(url, "namespaces", "set-inactive-topic-policies", namespace, "-e", "-t", "5m",
                 "-m", "delete_when_no_subscriptions").returncode == 0
    assert http.get(f"/admin/v2/namespaces/{namespace}/inactiveTopicPolicies").json() == {
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions",
        "maxInactiveDurationSeconds": 300, "deleteWhileInactive": True}
    policies = http.get(f"/admin/v2/namespaces/{namespace}").json()
    assert policies["publishMaxMessageRate"]["publishThrottlingRateInMsg"] == 1000
    assert policies["inactive_topic_policies"]["deleteWhileInactive"] is True


@pytest.mark.parametrize(("path", "body", "status"), [
    ("maxProducersPerTopic", -1, 412),
    ("maxProducersPerTopic", 2**31, 400),
    ("maxProducersPerTopic", "many", 400),
    ("publishRate", {"publishThrottlingRateInMsg": "x"}, 400),
    ("publishRate", {"unknownField": 1}, 400),
    ("dispatchRate", {"ratePeriodInSecond": 0}, 400),
    ("inactiveTopicPolicies", {"deleteWhileInactive": True, "inactiveTopicDeleteMode": "nope"},
     400),
    ("autoSubscriptionCreation", {"allowAutoSubscriptionCreation": "yes"}, 400),
    ("subscriptionAuthMode", "Everything", 400),
])
def test_invalid_values_are_refused_and_nothing_is_stored(
        http: Http, namespace: str, path: str, body: object, status: int) -> None:
    before = http.get(f"/admin/v2/namespaces/{namespace}").json()
    assert http.post(f"/admin/v2/namespaces/{namespace}/{path}", body).status == status
    assert http.get(f"/admin/v2/namespaces/{namespace}").json() == before
