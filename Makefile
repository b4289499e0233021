# Two entry points for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: run test bench chaos fuzz system-packages clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

# Every extra (spark, operator, cli): `make run` promises the CLIs and `pulsar sql` too.
# A service-only install is `pip install .` (no Spark, no kopf; see README).
$(VENV)/.installed: $(VENV)/bin/python pyproject.toml
	$(PIP) install -e '.[all]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[all,test]'
	touch $@

## make run: create .venv, install the project with every extra and start `pulsar standalone`.
run: $(VENV)/.installed
	$(VENV)/bin/pulsar standalone

## make test: install what the tests need (Debian etcd-server, kubectl, a JRE) and run the whole suite,
## on two pytest-xdist workers; each test file runs whole on one worker, in order (several e2e files
## build a live cluster in their first test and use it in the next ones).
test: $(VENV)/.installed-test system-packages
	$(PY) -m pytest -n 2 --dist loadfile

## make bench: benchmarks (never part of `make test`), with pulsar-lite as the peer.
bench: $(VENV)/.installed-test
	$(PIP) install -e '.[all,test,bench]'
	$(PY) -m bench

## make chaos [CYCLES=100] [SEED=n] [EXCLUDE=kind,...]: a chaos run (tools/chaos): a local
## cluster attacked by a seeded nemesis, then a checker; report in build/chaos-report/
## (see docs/reliability.md).
CYCLES  ?= 100
SEED    ?=
EXCLUDE ?=
chaos: $(VENV)/.installed-test system-packages
	$(PY) -m tools.chaos --cycles $(CYCLES) $(if $(SEED),--seed $(SEED)) $(if $(EXCLUDE),--exclude $(EXCLUDE)) --report-dir build/chaos-report

## make fuzz [FRAMES=1000000] [SEED=n]: hostile frames at a standalone broker and a proxy
## (tools/fuzz); reports frames sent, peak RSS and that both still serve a normal client.
FRAMES ?= 1000000
fuzz: $(VENV)/.installed-test system-packages
	$(PY) -m tools.fuzz --frames $(FRAMES) $(if $(SEED),--seed $(SEED)) --report-dir build/fuzz-report

# Debian packages the tests use: etcd (metadata store), kubectl (operator e2e against the
# emulator), a Java runtime (Spark). Installed only when the command is missing.
system-packages:
	@missing=""; \
	command -v etcd >/dev/null 2>&1 || missing="$$missing etcd-server"; \
	command -v kubectl >/dev/null 2>&1 || missing="$$missing kubernetes-client"; \
	command -v java >/dev/null 2>&1 || missing="$$missing default-jre-headless"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

clean:
	rm -rf $(VENV) build *.egg-info
