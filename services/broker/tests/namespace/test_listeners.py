"""advertisedListeners / internalListenerName, parsed and chosen as Apache's broker does."""

from __future__ import annotations

import pytest
from pulsar_broker import config
from pulsar_broker.namespace import listeners
from pulsar_broker.namespace.listeners import AdvertisedListener
from pulsar_broker.namespace.ownership import BrokerUrls
from pulsar_common import errors


@pytest.mark.parametrize(("text", "parsed"), [
    ("", ()),
    ("internal:pulsar://10.0.0.1:6650",
     (AdvertisedListener("internal", "pulsar://10.0.0.1:6650"),)),
    (("internal:pulsar://10.0.0.1:6650, external:pulsar://ext:16650,"
      "external:pulsar+ssl://ext:16651"),
     (AdvertisedListener("internal", "pulsar://10.0.0.1:6650"),
      AdvertisedListener("external", "pulsar://ext:16650", "pulsar+ssl://ext:16651"))),
])
def test_listeners_are_parsed_by_name(text, parsed):
    assert listeners.parse(text) == parsed


@pytest.mark.parametrize("text", [
    "internal",                                          # no URL
    "internal:10.0.0.1:6650",                            # no scheme
    "internal:http://10.0.0.1:8080",                     # not a broker service URL
    "internal:pulsar://a:6650,internal:pulsar://b:6650",  # two plain URLs for one name
])
def test_malformed_listeners_stop_the_broker(text):
    with pytest.raises(errors.ConfigError):
        config.load(None, {"advertisedListeners": text})


def test_the_internal_listener_is_the_named_one_or_the_first():
    parsed = listeners.parse("a:pulsar://a:1,b:pulsar://b:2")
    assert listeners.internal(parsed, "") == parsed[0]
    assert listeners.internal(parsed, "b") == parsed[1]
    with pytest.raises(errors.ConfigError):
        listeners.internal(parsed, "c")
    with pytest.raises(errors.ConfigError):
        config.load(None, {"internalListenerName": "internal"})
    with pytest.raises(errors.ConfigError):
        config.load(None, {"advertisedListeners": "a:pulsar+ssl://a:1"})


def test_a_lookup_answers_the_asked_listener_and_fails_for_an_unknown_one():
    owner = BrokerUrls("pulsar://10.0.0.1:6650", "http://10.0.0.1:8080",
                       listeners.parse("internal:pulsar://10.0.0.1:6650,"
                                       "external:pulsar://ext:16650"))
    assert owner.native_url_for(None) == "pulsar://10.0.0.1:6650"
    assert owner.native_url_for("external") == "pulsar://ext:16650"
    with pytest.raises(listeners.ListenerNotFoundError, match="do not have nope listener"):
        owner.native_url_for("nope")
    # A broker without listeners has none to offer either.
    with pytest.raises(listeners.ListenerNotFoundError):
        BrokerUrls("pulsar://h:6650", "http://h:8080").native_url_for("external")


def test_listeners_travel_in_the_ownership_record_but_do_not_change_who_a_broker_is():
    owner = BrokerUrls("pulsar://h:6650", "http://h:8080",
                       listeners.parse("internal:pulsar://h:6650,external:pulsar://e:1"))
    record = owner.to_json()
    assert record["advertisedListeners"] == {
        "internal": {"brokerServiceUrl": "pulsar://h:6650", "brokerServiceUrlTls": None},
        "external": {"brokerServiceUrl": "pulsar://e:1", "brokerServiceUrlTls": None}}
    again = BrokerUrls.from_json(record)
    assert again.listeners == owner.listeners
    assert again == BrokerUrls("pulsar://h:6650", "http://h:8080")
