"""Message expiry: acknowledge, for one subscription, every message published before a time.

Shared by the admin call `expireMessages/{seconds}` and the periodic check
that applies a namespace's message TTL (policy_enforcer.py). As Apache's
expiry monitor does, only the entries after the mark-delete position are
searched (publish times grow along the log), and the cursor moves with one
cumulative acknowledgement.
"""

from __future__ import annotations

from pulsar_common.wire import entry_info

from pulsar_broker.managed_ledger import api as ml


async def newest_expired(cursor: ml.ManagedCursor, cutoff_ms: int) -> ml.Position | None:
    """The newest entry after the mark-delete position published at or before cutoff_ms."""
    found = await cursor.find_newest_matching(
        lambda entry: entry_info.parse_metadata(entry.data).publish_time <= cutoff_ms,
        active_only=True)
    if found is None or found <= cursor.mark_delete_position:
        return None
    return found


async def expire_before(cursor: ml.ManagedCursor, cutoff_ms: int) -> bool:
    """Acknowledge every entry published at or before cutoff_ms; True when the cursor moved."""
    found = await newest_expired(cursor, cutoff_ms)
    if found is None:
        return False
    await cursor.mark_delete(found)
    return True
