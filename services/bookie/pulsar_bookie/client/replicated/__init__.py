"""The replicated ledger client: ledgers striped over ensembles of bookies with write and
ack quorums, a single writer, fencing and recovery, ensemble changes."""
