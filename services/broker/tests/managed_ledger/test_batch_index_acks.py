"""Batch-index acknowledgements in the cursor (acknowledgmentAtBatchIndexLevelEnabled): single
messages of a batch acknowledged, kept with the cursor's individually deleted ranges,
persisted, recovered after a crash, and the entry deleted once all of its messages are."""

from __future__ import annotations

from typing import Any

from pulsar_broker.managed_ledger import api, config, metadata
from pulsar_common import config as common_config

NAME = "public/default/persistent/batch-index-acks"


def unacked(batch_size: int, *acked: int) -> tuple[int, ...]:
    """The bit-set words a client sends: bit i set while message i is not acknowledged."""
    bits = sum(1 << i for i in range(batch_size) if i not in acked)
    return tuple(((bits >> (64 * w)) & (2**64 - 1)) - (2**64 if (bits >> (64 * w + 63)) & 1
                                                         else 0)
                 for w in range((batch_size + 63) // 64))


async def batches(stack: Any, count: int) -> tuple[Any, list[api.Position]]:
    """A cursor from the start and the positions of `count` entries (each a batch)."""
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    return sub, [await ml.add_entry(b"batch-%d" % i) for i in range(count)]


async def test_batch_index_acks_add_up_and_the_entry_goes_once_every_message_is_acked(
        stack: Any) -> None:
    sub, p = await batches(stack, 2)
    await sub.delete_batch_indexes(p[0], unacked(4, 1))
    await sub.delete_batch_indexes(p[0], unacked(4, 3))
    assert sub.batch_ack_set(p[0]) == unacked(4, 1, 3)
    assert not sub.is_acknowledged(p[0])
    await sub.delete_batch_indexes(p[0], unacked(4, 0, 2))
    assert sub.is_acknowledged(p[0]) and sub.batch_ack_set(p[0]) is None
    assert sub.mark_delete_position == p[0]


async def test_a_batch_of_more_than_64_messages_uses_several_words_with_the_sign_bit(
        stack: Any) -> None:
    sub, p = await batches(stack, 1)
    words = unacked(100, 62, 64)
    assert words[0] < 0
    await sub.delete_batch_indexes(p[0], words)
    assert sub.batch_ack_set(p[0]) == words


async def test_batch_index_acks_are_persisted_and_survive_a_crash(make_stack: Any) -> None:
    first = await make_stack(cursor_position_flush_seconds=0)
    sub, p = await batches(first, 3)
    await sub.delete_batch_indexes(p[1], unacked(5, 0, 4))
    stored = await first.store.get(metadata.cursor_path(NAME, "sub"))
    assert b"batchedEntryDeletionIndexInfo" in stored.value
    await first.stop(clean=False)

    second = await make_stack()
    again = await second.factory.open(NAME)
    resumed = again.cursors[0]
    assert resumed.batch_ack_set(p[1]) == unacked(5, 0, 4)
    assert resumed.batch_ack_set(p[0]) is None
    assert [e.position for e in await resumed.read_entries(10)] == p


async def test_acking_the_whole_entry_or_past_it_forgets_its_batch_indexes(stack: Any) -> None:
    sub, p = await batches(stack, 3)
    await sub.delete_batch_indexes(p[0], unacked(3, 0))
    await sub.delete_batch_indexes(p[2], unacked(3, 0))
    await sub.delete([p[2]])
    assert sub.batch_ack_set(p[2]) is None
    await sub.mark_delete(p[1])
    assert sub.batch_ack_set(p[0]) is None


async def test_reset_forgets_batch_index_acks(stack: Any) -> None:
    sub, p = await batches(stack, 2)
    await sub.delete_batch_indexes(p[0], unacked(3, 2))
    await sub.reset_cursor(api.EARLIEST)
    assert sub.batch_ack_set(p[0]) is None


async def test_batch_index_acks_are_ignored_when_the_broker_turns_them_off(make_stack: Any) -> None:
    stack = await make_stack(deletion_at_batch_index_level_enabled=False)
    sub, p = await batches(stack, 1)
    await sub.delete_batch_indexes(p[0], unacked(3, 0))
    assert sub.batch_ack_set(p[0]) is None
    await sub.delete_batch_indexes(p[0], unacked(3, 0, 1, 2))
    assert not sub.is_acknowledged(p[0])


async def test_only_the_oldest_partly_acked_batches_are_persisted(make_stack: Any) -> None:
    first = await make_stack(cursor_position_flush_seconds=0,
                             max_batch_deleted_index_to_persist=1)
    sub, p = await batches(first, 3)
    await sub.delete_batch_indexes(p[2], unacked(2, 0))
    await sub.delete_batch_indexes(p[1], unacked(2, 1))
    await first.stop()
    second = await make_stack()
    resumed = (await second.factory.open(NAME)).cursors[0]
    assert resumed.batch_ack_set(p[1]) == unacked(2, 1)
    assert resumed.batch_ack_set(p[2]) is None


def test_the_settings_load_from_apache_keys_with_apache_defaults() -> None:
    defaults = common_config.load(config.ManagedLedgerConfig)
    assert defaults.deletion_at_batch_index_level_enabled is True
    assert defaults.max_batch_deleted_index_to_persist == 10000
    loaded = common_config.load(config.ManagedLedgerConfig, overrides={
        "acknowledgmentAtBatchIndexLevelEnabled": "false",
        "managedLedgerMaxBatchDeletedIndexToPersist": "5",
    })
    assert loaded.deletion_at_batch_index_level_enabled is False
    assert loaded.max_batch_deleted_index_to_persist == 5
