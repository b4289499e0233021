"""The local storage engine of one bookie, modelled on BookKeeper's DbLedgerStorage.

`engine.LedgerStorageEngine` implements `api.LedgerStorage`. Its parts:

- `journal`: append-only journal files with group commit (one writer thread per journal directory)
- `write_cache`: entries not yet flushed (two halves: one filling, one flushing)
- `entry_log` + `checkpoint`: flushed entries, sorted by (ledger, entry), in entry log files
- `index`: RocksDB (rocksdict) index of entry locations, ledger info, entry log usage, log marks
- `reader` + `read_cache`: reads from entry logs with read-ahead
- `recovery`: journal replay after a restart; `gc`: garbage collection and compaction
- `cookie`: the data-directory identity check at start-up
- `stress`: a driver for crash tests (`python -m pulsar_bookie.storage.stress`)

On disk:

    <journalDirectory>/current/VERSION              cookie
    <journalDirectory>/current/<file id hex>.txn    journal files
    <ledgerDirectory>/current/VERSION               cookie
    <ledgerDirectory>/current/<log id hex>.log      entry logs (spread over the ledger directories)
    <first ledgerDirectory>/current/index/          RocksDB index
"""
