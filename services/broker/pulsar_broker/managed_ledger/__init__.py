"""ManagedLedger: a topic's log as a list of ledgers, with durable cursors over it."""
