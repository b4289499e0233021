"""Test support shipped with the package: the seeded ledger-protocol simulation."""
