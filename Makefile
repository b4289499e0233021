# Two entry points for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: run test bench etcd-server clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

$(VENV)/.installed: $(VENV)/bin/python pyproject.toml
	$(PIP) install -e '.'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[test]'
	touch $@

## make run: create .venv, install the project and start `pulsar standalone`.
run: $(VENV)/.installed
	$(VENV)/bin/pulsar standalone

## make test: install what the tests need (Debian etcd-server too) and run the whole suite.
test: $(VENV)/.installed-test etcd-server
	$(PY) -m pytest

## make bench: benchmarks (never part of `make test`).
bench: $(VENV)/.installed-test
	$(PY) -m bench

etcd-server:
	@command -v etcd >/dev/null 2>&1 || { \
	  echo "etcd not found: installing Debian etcd-server"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq etcd-server; }

clean:
	rm -rf $(VENV) build *.egg-info
