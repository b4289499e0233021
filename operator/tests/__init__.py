"""Operator tests. This file makes pytest name these modules `tests.*`; without it,
importlib mode names them `operator.tests.*` and replaces the standard library's
`operator` module in sys.modules with the operator/ folder."""
