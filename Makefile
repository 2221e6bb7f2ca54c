# Entry points for a fresh clone (see README): `make demo`, `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run demo test check lint pytest generate compat-clients clean

$(BIN)/python:
	@echo "make: creating the virtual environment $(VENV)/ with $(PYTHON), then updating its pip"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip

# The one slow step of a fresh clone (about a minute and a half): said, with a line every
# 15 s while pip works quietly. It runs again only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "make: installing driftgate and its dependencies into $(VENV)/ (pip install -e '.[dev]'),"
	@echo "make: about a minute and a half the first time, then skipped until pyproject.toml changes"
	@$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]' & pip=$$!; seconds=0; \
	while kill -0 $$pip 2>/dev/null; do \
	  sleep 1; seconds=$$((seconds + 1)); \
	  if [ $$((seconds % 15)) -eq 0 ]; then echo "make: still installing ($$seconds s)"; fi; \
	done; wait $$pip
	@touch $@
	@echo "make: installed; the command is $(BIN)/driftgate"

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

# The suite runs on one worker per core (pytest-xdist; each worker has its own migrated
# template database and its own loopback servers): `make pytest PYTEST_WORKERS=0` runs it in
# one process. PYTEST_ARGS adds options (CI's --record-passed and --skip-passed, see
# tests/conftest.py).
PYTEST_WORKERS ?= auto
PYTEST_ARGS ?=
pytest: $(VENV)/.installed
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

## check: the inner loop: ruff and the suite without the slow end-to-end tests (real
## processes, the demo, the browser), stopping at the first failure
check: $(VENV)/.installed
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal -m "not slow" -x -q

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
