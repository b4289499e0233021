"""The metadata store: one async interface, an etcd backend and an embedded RocksDB backend."""
