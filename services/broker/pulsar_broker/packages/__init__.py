"""Packages management: function, sink and source code kept by the brokers, as Apache's.

A package is `type://tenant/namespace/name@version` (names.py); its bytes are
a BookKeeper ledger written through the broker's ledger client, its metadata
and the ledger's id, size and checksum a record in the metadata store
(storage.py), so every broker of a cluster serves every package. The admin
REST API over it is web/packages.py.
"""
