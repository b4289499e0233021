"""Topic compaction: the latest value per key, kept in a compacted ledger.

`retention` decides which messages survive (a pure core), `compacted_ledger`
is the compacted ledger's entry format and its reader, `compactor` runs a
compaction of one topic and switches it to the new compacted ledger,
`compacted_cursor` serves `read_compacted` subscriptions from it.
"""
