"""encryptionRequired of a namespace, enforced as Apache's broker does: a producer that does
not say it encrypts is refused (MetadataError "Encryption is required in <topic>"), a
message whose metadata carries no encryption keys is refused (SEND_ERROR MetadataError
"Messages must be encrypted") without closing the connection, and encrypted messages go
through. The broker reads only the message metadata, never the payload."""

from __future__ import annotations

import time

import pulsar
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pulsar_broker.topics import persistent_topic
from pulsar_common import naming
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


@pytest.fixture(scope="module")
def key_reader(tmp_path_factory: pytest.TempPathFactory) -> pulsar.CryptoKeyReader:
    """An RSA key pair in PEM files, read by the client's CryptoKeyReader."""
    folder = tmp_path_factory.mktemp("keys")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = folder / "private.pem"
    public = folder / "public.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return pulsar.CryptoKeyReader(str(public), str(private))


@pytest.fixture
def encrypted_namespace(admin, namespace):
    admin.set_policy(namespace, "encryptionRequired", True)
    assert admin.ok("GET", f"/admin/v2/namespaces/{namespace}/encryptionRequired") is True
    return namespace


def _producer_command(conn, topic: str, producer_id: int, encrypted: bool) -> pb.BaseCommand:
    command = pb.BaseCommand(type=T.PRODUCER)
    command.producer.topic = topic
    command.producer.producer_id = producer_id
    command.producer.request_id = conn.next_request_id()
    command.producer.encrypted = encrypted
    return command


def _entry(sequence_id: int, encrypted: bool) -> bytes:
    metadata = pb.MessageMetadata(producer_name="raw", sequence_id=sequence_id,
                                  publish_time=int(time.time() * 1000))
    if encrypted:
        # The broker never decrypts: any key and payload bytes stand for a client's.
        metadata.encryption_keys.add(key="k", value=b"\x01" * 32)
        metadata.encryption_param = b"\x02" * 12
    return frame.encode_entry(metadata, b"\x03" * 16)


def test_an_encrypting_producer_publishes_and_the_key_holder_reads(
        client, encrypted_namespace, key_reader):
    topic = f"persistent://{encrypted_namespace}/secret"
    consumer = client.subscribe(topic, "s", crypto_key_reader=key_reader)
    producer = client.create_producer(topic, encryption_key="k", crypto_key_reader=key_reader)
    producer.send(b"for key holders only")
    assert consumer.receive(timeout_millis=10_000).data() == b"for key holders only"
    producer.close()
    consumer.close()


def test_a_producer_that_does_not_encrypt_is_refused(standalone, encrypted_namespace):
    # The C++ client under the wheel retries a MetadataError until its operation timeout
    # (as against Apache); the raw test below checks the code the broker answers with.
    client = pulsar.Client(standalone.service_url, operation_timeout_seconds=1,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.Timeout):
            client.create_producer(f"persistent://{encrypted_namespace}/plain")
    finally:
        client.close()


def test_the_refusals_carry_apaches_codes_and_the_connection_stays(
        raw_connection, encrypted_namespace):
    topic = f"persistent://{encrypted_namespace}/raw"
    conn = raw_connection()
    refused = conn.request(_producer_command(conn, topic, 1, encrypted=False))
    assert refused.command.type == T.ERROR
    assert refused.command.error.error == pb.MetadataError
    assert refused.command.error.message == f"Encryption is required in {topic}"

    accepted = conn.request(_producer_command(conn, topic, 2, encrypted=True))
    assert accepted.command.type == T.PRODUCER_SUCCESS
    plain = conn.send_entry(_entry(0, encrypted=False), producer_id=2, sequence_id=0)
    assert plain.command.type == T.SEND_ERROR
    assert plain.command.send_error.error == pb.MetadataError
    assert plain.command.send_error.message == "Messages must be encrypted"
    sealed = conn.send_entry(_entry(1, encrypted=True), producer_id=2, sequence_id=1)
    assert sealed.command.type == T.SEND_RECEIPT
    assert sealed.command.send_receipt.sequence_id == 1


def test_turning_the_policy_on_closes_producers_that_do_not_encrypt(
        raw_connection, admin, namespace):
    topic = f"persistent://{namespace}/turned-on"
    conn = raw_connection()
    assert conn.request(_producer_command(conn, topic, 1, encrypted=False)).command.type == \
        T.PRODUCER_SUCCESS
    assert conn.request(_producer_command(conn, topic, 2, encrypted=True)).command.type == \
        T.PRODUCER_SUCCESS
    admin.set_policy(namespace, "encryptionRequired", True)
    closed = conn.read()  # waits up to the connection's timeout
    assert closed.command.type == T.CLOSE_PRODUCER
    assert closed.command.close_producer.producer_id == 1
    # The encrypting producer stays and keeps publishing.
    sealed = conn.send_entry(_entry(0, encrypted=True), producer_id=2, sequence_id=0)
    assert sealed.command.type == T.SEND_RECEIPT


def test_turning_the_policy_off_lets_plain_producers_in_again(client, admin,
                                                               encrypted_namespace):
    admin.set_policy(encrypted_namespace, "encryptionRequired", False)
    producer = client.create_producer(f"persistent://{encrypted_namespace}/plain-again")
    producer.send(b"plain")
    producer.close()


@pytest.mark.parametrize(("topic", "system"), [
    ("persistent://pulsar/system/healthcheck-broker-1", True),
    ("persistent://public/default/__change_events", True),
    ("persistent://public/default/__change_events-partition-0", True),
    ("persistent://public/default/orders", False),
    ("persistent://public/default/orders__transaction_pending_ack", True),
])
def test_which_topics_are_system_topics(topic, system):
    assert persistent_topic.is_system_topic(naming.TopicName.parse(topic)) is system
