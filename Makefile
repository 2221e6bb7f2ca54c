# Entry points for a fresh clone (see README): `make demo`, `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run demo test lint pytest generate clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

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

pytest: $(VENV)/.installed
	$(BIN)/pytest

## generate: regenerate config-schema/ and docs/rules.md from the code (tests fail when stale)
generate: $(VENV)/.installed
	$(BIN)/python -m controller.configschema
	$(BIN)/python -m tests.diffs.gen_rules_doc
	$(BIN)/python -m tests.gen_lint_doc

clean:
	rm -rf $(VENV) build dist *.egg-info
