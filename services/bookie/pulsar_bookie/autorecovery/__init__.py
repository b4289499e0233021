"""Autorecovery: the auditor that finds under-replicated ledgers and the workers that fix them.

    plan.py          pure decisions: lost bookies, ledgers to mark, fragments to copy
    underreplication.py   the under-replication records in the metadata store
    copier.py        copying one fragment's entries to a new bookie
    worker.py        claiming marked ledgers and re-replicating them
    checker.py       the periodic check that replicas hold their entries
    auditor.py       the elected auditor
    admin.py         what the HTTP admin endpoints ask of the cluster
    service.py       auditor candidate + worker in one process (`pulsar autorecovery` or a bookie)
"""
