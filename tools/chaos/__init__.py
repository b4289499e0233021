"""The chaos harness (`make chaos`): real processes of a local cluster attacked by a seeded
nemesis while a workload runs, then a checker that reads every topic back. See
docs/reliability.md."""
