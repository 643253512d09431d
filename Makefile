# focuscrawl: `make demo` runs the main job on the embedded default, `make test` passes the tests.
# Every target installs what it needs, idempotently (stamps are rebuilt when their inputs change).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
JARS := var/jars
PYTEST_ARGS ?=

.PHONY: setup venv jars sysdeps demo test test-unit services-up services-down services-status \
        world bench soak chaos fuzz lock clean fue-week test-platform check-claims docs durations

setup: venv jars

# Bytecode is compiled once here: with PYTHONDONTWRITEBYTECODE set (as on CI) every process would
# otherwise compile pandas & co. from source on start (12-30 s per fresh consumer, seen here).
venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check uv==0.13.9
	$(BIN)/uv pip install -q -p $(BIN)/python -r requirements.lock || { df -h . "$$($(BIN)/uv cache dir)" 2>/dev/null; \
	  echo "make setup: installing requirements.lock failed. A cold install needs about 7 GB free (the venv 2.4 GB," \
	       "uv's cache 4.3 GB, measured 2026-12-06): free space or set UV_CACHE_DIR to a disk with room, then" \
	       "run make setup again; it resumes." >&2; exit 1; }
	$(BIN)/uv pip install -q -p $(BIN)/python --no-deps -e .
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib >/dev/null
	@touch $@

jars: $(JARS)/kafka/.stamp $(JARS)/spark/.stamp
$(JARS)/kafka/.stamp: jvm/kafka/pom.xml
	@rm -rf $(JARS)/kafka && mkdir -p $(JARS)/kafka
	cd jvm/kafka && mvn -q -B dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(JARS)/kafka
	@touch $@
$(JARS)/spark/.stamp: jvm/spark/pom.xml
	@rm -rf $(JARS)/spark && mkdir -p $(JARS)/spark
	cd jvm/spark && mvn -q -B dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(JARS)/spark
	@touch $@

# Debian packages for the browser test, compose validation and the PostgreSQL-backed Airflow test
# (root, as on CI; skipped when present).
sysdeps:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null && command -v docker-compose >/dev/null && \
	  command -v prometheus >/dev/null && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver docker-compose postgresql >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }

# The live platform on the world for DEMO_FOR (default 10m), then its report: make demo DEMO_FOR=20m
DEMO_FOR ?= 10m
demo: setup
	$(BIN)/focuscrawl demo --for $(DEMO_FOR)

# The live platform's end-to-end file first, alone among the integration tests (offset 1000), then the other
# integration tests on two pytest-xdist workers (a file per worker, each with engines of its own, offsets 1500 and
# 2000); beside both, at the lowest CPU priority, the unit tests and the standalone ones (each starts a local Spark
# of its own) on two more (offsets 3500 and 4000). The e2e file took 13:18 alone (eb2406e) and about 65 minutes
# beside the other integration worker in the 89-minute CI of f9dea0c: its twenty processes contend with every other
# engine for the 2 cores, run five times as long, and its loops miss their waits. Each phase and worker has ports and
# a state folder of its own (tests/conftest.py); the unit phase's output is printed when all are done
# (var/test-unit.log). Every phase's outcome counts; every test's outcome and time as JUnit XML
# (var/junit-platform.xml, var/junit.xml, var/junit-unit.xml), the format CI systems read.
# Each phase's workers take its files longest first (tests/durations.json, which `make durations` rewrites from
# the JUnit files; tests/scheduling.py), not xdist's order of most tests first; the integration phase's tests that
# use the session's Airflow go to one worker together (tests/scheduling.py), so it starts once.
UNIT_PORT_OFFSET ?= 3000
E2E := tests/platform/test_platform_e2e.py
test: setup sysdeps
	@rc=0; mkdir -p var; \
	FOCUSCRAWL_PORT_OFFSET=$(UNIT_PORT_OFFSET) nice -n 19 $(BIN)/python -m pytest -m "not integration" -n 2 \
	  --dist loadfile --no-loadscope-reorder --junitxml=var/junit-unit.xml $(PYTEST_ARGS) > var/test-unit.log 2>&1 & unit=$$!; \
	$(BIN)/python -m pytest -m integration $(E2E) --junitxml=var/junit-platform.xml $(PYTEST_ARGS) || rc=$$?; \
	$(BIN)/python -m pytest -m integration --ignore=$(E2E) -n 2 --dist loadfile --no-loadscope-reorder --junitxml=var/junit.xml \
	  $(PYTEST_ARGS) || rc=$$?; \
	wait $$unit || rc=$$?; \
	echo "=== unit tests (var/test-unit.log) ==="; cat var/test-unit.log; \
	exit $$rc

# The live platform end to end (focuscrawl up on the world, every loop closing through Airflow, a SIGKILL of
# every kind of process): tests/platform/test_platform_e2e.py alone, 13-18 min on 2 cores; make test runs it too.
test-platform: setup sysdeps
	$(BIN)/python -m pytest $(E2E) $(PYTEST_ARGS)

# Each test file's seconds in the last `make test` (var/junit*.xml) into tests/durations.json: the order its workers
# take files in (tests/scheduling.py). Rerun after a file's time changes much, and commit the file.
durations:
	$(BIN)/python tests/scheduling.py

test-unit: setup
	$(BIN)/python -m pytest -m "not integration and not standalone" -n 2 --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

services-up: setup
	$(BIN)/focuscrawl services up
services-down:
	@test -x $(BIN)/focuscrawl && $(BIN)/focuscrawl services down || true
services-status: setup
	$(BIN)/focuscrawl services status

# Every benchmark with its baselines in one run, results under bench/results/ (bench-quick.md, the README's
# performance table); FULL=1 runs the papers' scales (an hour or more on 2 cores): make bench FULL=1
bench: setup
	$(BIN)/python -m bench $(if $(FULL),--full,)

# Coverage-guided fuzzing (atheris) of every parser and the URL guard, 100,000 inputs each; a crash is
# saved under tests/fuzz/regressions/ and replayed by make test (which also fuzzes each target briefly).
fuzz: setup
	$(BIN)/python fuzz/run.py --summary bench/results/fuzz.json

soak: setup
	FOCUSCRAWL_FAULT_SUITE=1 $(BIN)/python -m pytest tests/reliability -m "integration" --soak

# An operator's worst afternoon (issue 33): `focuscrawl up projects/world.toml`, 30 minutes of SIGKILLs of every
# process and service, then the settle and checks; the report goes to bench/results/chaos (tests/reliability/chaos.py).
chaos: setup
	$(BIN)/python tests/reliability/chaos.py

# Every figure the docs quote, recomputed from the committed result files (docs/loops/claims.md);
# make test runs it too (tests/test_docs.py), with mkdocs build --strict.
check-claims: setup
	$(BIN)/python -m bench.claims

# The documentation site under var/site (mkdocs-material); `$(BIN)/mkdocs serve` to read it live.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Recompile the full pin set after editing requirements.in.
lock: venv
	$(BIN)/uv pip compile requirements.in -p 3.11 -o requirements.lock

clean: services-down
	rm -rf var/lake var/run var/logs

# Seed 000's experiment over a simulated week on the eRisk world, every method, two donor-disjoint folds,
# with the committed run's settings (bench/results/fue-folds: each fold ran 1.5 h as its own process with
# --only-fold; here the folds run one after the other, about 3 h on 2 cores).
fue-week: setup
	$(BIN)/focuscrawl experiment fue --methods all --folds 2 --duration 7d --step 5m --budget 20 \
	  --users 20000 --events-per-minute 15 --base-rate 0.02 --checkpoint-every 6h --seed 0 \
	  --output var/reports/fue-week
