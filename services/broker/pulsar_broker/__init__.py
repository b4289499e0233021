"""The broker: binary protocol server, topics, subscriptions, managed ledgers, admin REST."""
