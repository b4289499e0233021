"""Benchmarks (not tests): `python -m bench [name ...]` runs every module here that has a `run(argv)`."""
