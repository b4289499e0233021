"""The bookie: a storage node (journal, entry logs, RocksDB index) and the ledger client."""
