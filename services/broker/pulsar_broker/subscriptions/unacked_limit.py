"""maxUnackedMessagesPerSubscription: a Shared or Key_Shared subscription stops dispatching
while its consumers together hold too many messages unacknowledged.

As Apache's multi-consumer dispatcher does, the subscription is blocked once the messages
delivered and not yet acknowledged reach the limit, and unblocked only when
acknowledgements (or consumers leaving) bring them below half of it, so a subscription at
the limit does not flap with every acknowledgement. A limit of 0 or less blocks nothing.
Pure: the caller passes the current count; the block is the only state.
"""

from __future__ import annotations


class UnackedLimit:
    def __init__(self, max_unacked_messages: int = 0) -> None:
        self.max_unacked_messages = max_unacked_messages
        #: Apache's blockedSubscriptionOnUnackedMsgs.
        self.blocked = False

    def room(self, unacked_messages: int) -> int | None:
        """How many more messages may go out now (0: blocked); None when unlimited.

        The read batch is cut to the room left, so a subscription overshoots the limit only
        by the messages of one batched entry (Apache overshoots by up to a read batch)."""
        limit = self.max_unacked_messages
        if limit <= 0:
            self.blocked = False
            return None
        if self.blocked and unacked_messages < limit // 2:
            self.blocked = False
        elif unacked_messages >= limit:
            self.blocked = True
        return 0 if self.blocked else limit - unacked_messages
