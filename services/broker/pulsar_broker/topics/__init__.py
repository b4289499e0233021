"""Topics: producers appending to a managed ledger, and their subscriptions."""
