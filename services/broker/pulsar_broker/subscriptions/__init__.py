"""Subscriptions: cursors plus the dispatchers that hand entries to consumers by type."""
