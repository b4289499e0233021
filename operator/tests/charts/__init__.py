"""Chart tests. This file makes pytest name these modules `charts.*`; without it,
importlib mode names them `operator.tests.charts.*` and replaces the standard
library's `operator` module in sys.modules with the operator/ folder."""
