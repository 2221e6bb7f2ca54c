# Entry points for a fresh clone (see README): `make demo`, `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run demo test check lint pytest generate compat-clients lock clean

$(BIN)/python:
	@echo "make: creating the virtual environment $(VENV)/ with $(PYTHON), then updating its pip"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip

# The one slow step of a fresh clone (about a minute and a half): said, with a line every
# 15 s while pip works quietly. The dependencies come from the lock file, every file checked
# against its hash (requirements-dev.lock, written by `make lock`), then driftgate itself in
# editable mode without them. It runs again only when pyproject.toml or the lock changes.
$(VENV)/.installed: pyproject.toml requirements-dev.lock | $(BIN)/python
	@echo "make: installing the locked dependencies and driftgate into $(VENV)/ (pip install"
	@echo "make: --require-hashes -r requirements-dev.lock, then pip install --no-deps -e .), about a"
	@echo "make: minute and a half the first time, then skipped until pyproject.toml or the lock changes"
	@{ $(BIN)/pip install --quiet --disable-pip-version-check --require-hashes -r requirements-dev.lock \
	  && $(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .; } & pip=$$!; seconds=0; \
	while kill -0 $$pip 2>/dev/null; do \
	  sleep 1; seconds=$$((seconds + 1)); \
	  if [ $$((seconds % 15)) -eq 0 ]; then echo "make: still installing ($$seconds s)"; fi; \
	done; wait $$pip
	@touch $@
	@echo "make: installed; the command is $(BIN)/driftgate"

# The lock files, from pyproject.toml: every dependency pinned, with the hashes of its files,
# for every platform (uv's universal resolution) on Python 3.11 and later. requirements.lock is
# what driftgate needs to run (the image installs it), requirements-dev.lock adds the tools
# the tests use; the first takes its pins from the second. Needs the package index.
LOCK_UV := 0.13.10
LOCK_ARGS := --universal --python-version 3.11 --generate-hashes --no-emit-index-url --quiet

## lock: pin the dependencies again after pyproject.toml changed (uv pip compile, with hashes);
## an existing pin is kept while it still fits (`make lock LOCK_UPGRADE=--upgrade` moves all)
LOCK_UPGRADE ?=
lock: | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check 'uv==$(LOCK_UV)'
	$(BIN)/uv pip compile pyproject.toml --extra dev $(LOCK_ARGS) $(LOCK_UPGRADE) -o requirements-dev.lock
	$(BIN)/uv pip compile pyproject.toml $(LOCK_ARGS) -c requirements-dev.lock -o requirements.lock

## run: install and start driftgate (API + migrations) on the embedded SQLite store
run: $(VENV)/.installed
	$(BIN)/driftgate up

## demo: install and watch drift happen on loopback (vendor simulator + driftgate), no internet
demo: $(VENV)/.installed
	$(BIN)/driftgate demo

## test: install, then lint (ruff), type-check (mypy --strict) and run the test suite
test: lint pytest

lint: $(VENV)/.installed
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

# The suite runs on two workers a core (pytest-xdist's `auto`, set in tests/conftest.py: much
# of its time is waiting on processes and sockets; each worker has its own migrated template
# database and its own loopback servers): `make pytest PYTEST_WORKERS=0` runs it in one
# process. PYTEST_ARGS adds options (CI's --record-passed and --skip-passed, see
# tests/conftest.py). The run writes bytecode caches (__pycache__/, ignored by git) even
# where PYTHONDONTWRITEBYTECODE is set: without them every worker and every `driftgate`
# process the tests start compiles the sources again (measured: 4 s a worker, 0.4 s a process).
PYTEST_WORKERS ?= auto
PYTEST_ARGS ?=
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest
pytest: $(VENV)/.installed
	$(PYTEST) -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

## check: the inner loop: ruff and the suite without the slow end-to-end tests (real
## processes, the demo, the browser), stopping at the first failure
check: $(VENV)/.installed
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(PYTEST) -n $(PYTEST_WORKERS) --dist worksteal -m "not slow" -x -q

## generate: regenerate config-schema/, docs/rules.md, docs/tool-lint.md, the table of
## docs/plans.md and docs/openapi.json from the code (tests fail when stale)
generate: $(VENV)/.installed
	$(BIN)/python -m controller.gitsources.configschema
	$(BIN)/python -m tests.diffs.gen_rules_doc
	$(BIN)/python -m tests.gen_lint_doc
	$(BIN)/python -m tests.gen_plans_doc
	$(BIN)/python -m tests.gen_openapi_doc

## compat-clients: build the hosted product's TypeScript CLI and MCP server from
## ../shared/clients/driftguard once (npm ci, npm run build) into .cache/driftguard-ts/
## for tests/compat/; nothing to do without the snapshot
compat-clients: $(VENV)/.installed
	$(BIN)/python -m tests.compat.tsclients

clean:
	rm -rf $(VENV) build dist *.egg-info
