"""The ledger client: the BookKeeper-style API brokers, autorecovery and Spark use."""
