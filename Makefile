# maka_es — every tool runs from the project venv (.venv), created on demand.
.DEFAULT_GOAL := help
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# The suite runs on every core (pytest-xdist); PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= auto
# Idle workers steal queued tests from busy ones, so one long test near the end does not leave
# the other core idle (pytest-xdist >= 3.2); ignored with PYTEST_WORKERS=0.
XDIST_DIST := $(if $(filter 0,$(PYTEST_WORKERS)),,--dist worksteal)
# PostgreSQL (ADR 0028): with the binaries on PATH and no server configured
# (MAKA_ES_TEST_PG_URL unset), `make test` starts a throwaway server under build/pg itself;
# MAKA_ES_TEST_PG=off turns that off (the PostgreSQL tests are then skipped, loudly).
PG_DIR := build/pg
PG_WRAP := $(if $(MAKA_ES_TEST_PG_URL)$(filter off,$(MAKA_ES_TEST_PG)),,$(if $(shell command -v initdb 2>/dev/null),scripts/pg-throwaway.sh run $(PG_DIR) --,))

.PHONY: help install fmt lint typecheck layers test test-deep demo docs docs-codes bench bench-quick check clean

help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install maka_es (editable) with dev tools

# The bench extra (LangGraph, DBOS, pyinstrument) only for `make bench`; never for `make test`.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

fmt: $(STAMP) ## Format and auto-fix
	$(BIN)/ruff format src tests examples bench
	$(BIN)/ruff check --fix src tests examples bench

lint: $(STAMP) ## ruff lint + format check
	$(BIN)/ruff check src tests examples bench
	$(BIN)/ruff format --check src tests examples bench

typecheck: $(STAMP) ## mypy --strict on src and tests
	$(BIN)/mypy

layers: $(STAMP) ## Capability layers, purity, no cycles, no test kit in the library (import-linter)
	$(BIN)/lint-imports

test: $(STAMP) ## The whole suite on SQLite and PostgreSQL (Hypothesis profile "ci"; long runs excluded)
	$(PG_WRAP) env HYPOTHESIS_PROFILE=ci $(BIN)/pytest -n $(PYTEST_WORKERS) $(XDIST_DIST) -m "not slow" $(PYTEST_ARGS)

test-deep: $(STAMP) ## Everything, with the "thorough" Hypothesis profile
	$(PG_WRAP) env HYPOTHESIS_PROFILE=thorough $(BIN)/pytest -n $(PYTEST_WORKERS) $(XDIST_DIST) $(PYTEST_ARGS)

demo: $(STAMP) ## Kill the example agent (maka_es.example_agent) with SIGKILL inside its Write, recover, continue
	$(BIN)/python -m maka_es.cli.demo

docs: $(STAMP) ## Build the documentation site into site/ (strict: a broken link or reference fails)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	@echo "open site/index.html"

bench: $(BENCH_STAMP) ## Measure against the raw floor, LangGraph and DBOS at the issue's sizes; writes docs/benchmarks.md; fixtures cached in build/bench-cache (ADR 0027)
	$(BIN)/python -m bench $(BENCH_ARGS)

bench-quick: $(BENCH_STAMP) ## About a minute of the same workloads, small sizes; writes a temp file
	$(BIN)/python -m bench --quick $(BENCH_ARGS)

docs-codes: $(STAMP) ## Regenerate docs/exceptions.md from the code registry (maka_es.codes)
	$(BIN)/python -m maka_es.codes > docs/exceptions.md.tmp && mv docs/exceptions.md.tmp docs/exceptions.md

check: lint typecheck layers test ## lint + types + layers + tests

clean: ## Remove the venv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache demo-data site build dist src/*.egg-info
