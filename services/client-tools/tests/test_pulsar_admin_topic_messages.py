"""`pulsar-admin topics` examine-messages, get-message-id, partitioned-terminate,
create-missed-partitions and the properties commands, run as processes against the
session's standalone."""

from __future__ import annotations

import datetime
import json

import pulsar


def test_examine_messages_and_get_message_id(admin, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/examine-{unique}"
    producer = client.create_producer(topic, batching_enabled=False)
    first = producer.send(b"first", properties={"Kind": "a"})
    producer.send(b"newest")
    producer.close()
    newest = admin.ok("topics", "examine-messages", topic)
    assert newest.splitlines()[0].startswith("Message ID: ")
    assert "|newest" in newest and "Properties:" not in newest
    oldest = admin.ok("topics", "examine-messages", topic, "-i", "earliest", "-m", "1")
    lines = oldest.splitlines()
    assert lines[0] == f"Message ID: {first.ledger_id()}:{first.entry_id()}"
    assert lines[1].startswith("Publish time: ") and int(lines[1].split(": ")[1]) > 0
    assert lines[2] == "Event time: 0"
    assert '"Kind": "a"' in oldest and "|first" in oldest
    at = datetime.datetime.fromtimestamp(0, tz=datetime.UTC).isoformat()
    found = json.loads(admin.ok("topics", "get-message-id", topic, "-d", at))
    assert found == {"ledgerId": first.ledger_id(), "entryId": first.entry_id(),
                     "partitionIndex": -1}
    naive = admin("topics", "get-message-id", topic, "-d", "2021-06-28T16:53:08")
    assert naive.returncode != 0



def test_examine_messages_shows_the_first_message_of_a_batch(
        admin, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/examine-batch-{unique}"
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=50)
    for i in range(3):
        producer.send_async(f"in-batch-{i}".encode(), None, properties={"i": str(i)})
    producer.flush()
    producer.close()
    shown = admin.ok("topics", "examine-messages", topic)
    assert shown.splitlines()[0].startswith("Batch Message ID: ")
    assert shown.splitlines()[0].endswith(":0")
    assert '"i": "0"' in shown and "|in-batch-0" in shown


def test_partitioned_topic_commands_and_topic_properties(admin, unique: str) -> None:
    topic = f"persistent://public/default/parts-{unique}"
    admin.ok("topics", "create-partitioned-topic", topic, "-p", "2", "-m", "a=1,b=2")
    admin.ok("topics", "create-missed-partitions", topic)
    admin.ok("topics", "update-properties", topic, "-p", "owner=team-a", "-p", "tier=gold")
    admin.ok("topics", "remove-properties", topic, "-k", "tier")
    assert json.loads(admin.ok("topics", "get-properties", topic)) == {
        "a": "1", "b": "2", "owner": "team-a"}
    ended = admin.ok("topics", "partitioned-terminate", topic).splitlines()
    assert [line.split(" successfully")[0] for line in ended] == [
        f"Topic {topic}-partition-0", f"Topic {topic}-partition-1"]
    assert all(" successfully terminated at " in line for line in ended)


def test_subscription_properties_commands(admin, unique: str) -> None:
    topic = f"persistent://public/default/sub-props-{unique}"
    admin.ok("topics", "create", topic)
    admin.ok("topics", "create-subscription", topic, "-s", "s", "-p", "team=a")
    get = ("topics", "get-subscription-properties", topic, "-s", "s")
    assert admin.ok(*get).strip() == '{"team":"a"}'
    refused = admin("topics", "update-subscription-properties", topic, "-s", "s")
    assert refused.returncode != 0
    assert "If you want to clear the properties you have to use --clear" in refused.stderr
    admin.ok("topics", "update-subscription-properties", topic, "-s", "s", "--clear")
    assert json.loads(admin.ok(*get)) == {}
