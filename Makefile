# mytorch book: one entry point for setting up, checking, building and testing.
# Run `make` or `make help` to see the targets.

SHELL := bash
.DEFAULT_GOAL := help
.SUFFIXES:

VENV    ?= .venv
JOBS    ?= 2
PORT    ?= 8888
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
BOOTPY  := $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null)
BOOKKIT := $(PY) -m bookkit

ifeq ($(BOOTPY),)
$(error no python3.11 or python3 on PATH: install Python 3.11, then run make again)
endif
USAGE := usage: make <target> [JOBS=2|auto] [PORT=8888]; `make help` lists the targets

ifeq ($(shell [[ "$(JOBS)" =~ ^([1-9][0-9]*|auto)$$ ]] && echo ok),)
$(info $(USAGE))
$(error JOBS must be a positive number or 'auto' (got '$(JOBS)'); e.g. make test JOBS=4)
endif
ifeq ($(shell [[ "$(PORT)" =~ ^[0-9]+$$ ]] && echo ok),)
$(info $(USAGE))
$(error PORT must be a number (got '$(PORT)'); e.g. make lab PORT=8899)
endif

OUT     ?= grades
N       ?= 100
TIMEOUT ?= 10

.PHONY: help venv lab test checks book exercises colab check mine grade bench-grade bench clean

help: ## list the targets
	@echo "usage: make <target> [JOBS=2|auto] [PORT=8888]"
	@echo
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  \1\t/' | expand -t 14

$(STAMP): pyproject.toml
	@test -x $(PY) || $(BOOTPY) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip || echo "note: could not upgrade pip (offline?); going on with this one"
	$(PY) -m pip install -e '.[dev,lab]'
	@touch $@

venv: $(STAMP) ## create .venv and install everything (re-runs when pyproject.toml changes)

lab: $(STAMP) ## start JupyterLab on the book (chapters and exercises open as notebooks)
	$(BOOKKIT) lab --port $(PORT)

checks: $(STAMP) ## only the fast sync checks (bilingual, teaches, exercises, colab)
	$(BOOKKIT) check-bilingual
	$(BOOKKIT) check-teaches
	$(BOOKKIT) check-links
	$(BOOKKIT) exercises --check
	$(BOOKKIT) colab --check

test: checks ## all checks, the whole test suite, then the library's tests on the solutions' pieces
	$(PY) -m pytest -n $(JOBS)
	@echo "== the library's tests again, every reference solution plugged in as a student's piece =="
	MYTORCH_MINE=solutions MYTORCH_MINE_QUIET=1 $(PY) -m pytest -n $(JOBS) -m library -q -p no:cacheprovider

book: $(STAMP) ## execute every chapter into build/ (ipynb + html, bilingual/zh/en)
	$(BOOKKIT) book

exercises: $(STAMP) ## regenerate exercises/ from solutions/
	$(BOOKKIT) exercises

colab: $(STAMP) ## regenerate notebooks/{zh,en}/ for Colab
	$(BOOKKIT) colab

check: $(STAMP) ## students: run your exercises' visible tests, print a verdict table
	$(BOOKKIT) grade

mine: $(STAMP) ## students: run the book's tests and chapters on your own pieces [MINE=exercises]
	$(BOOKKIT) mine $(if $(MINE),--source "$(MINE)") --jobs $(if $(filter auto,$(JOBS)),$(shell nproc),$(JOBS))

grade: $(STAMP) ## instructors: grade SUBMISSIONS=<dir> [OUT=grades] [JOBS=2] [TIMEOUT=10 s/test]
	@if [ -z "$(SUBMISSIONS)" ]; then \
	  echo "usage: make grade SUBMISSIONS=<dir> [OUT=grades] [JOBS=2] [TIMEOUT=10]" >&2; \
	  echo "  <dir> holds one folder per student, named by the student's id, with their exercises/ files" >&2; \
	  exit 2; fi
	$(BOOKKIT) grade-class "$(SUBMISSIONS)" --out "$(OUT)" --jobs $(if $(filter auto,$(JOBS)),$(shell nproc),$(JOBS)) --timeout $(TIMEOUT)

bench-grade: $(STAMP) ## time `make grade` on N generated submissions with JOBS=2 (N=100)
	$(BOOKKIT) bench-grade --n $(N) --jobs 2

bench: $(STAMP) ## run the benchmarks (python -m bench)
	@if [ -f bench/__main__.py ]; then $(PY) -m bench; else echo "no benchmarks yet (bench/__main__.py does not exist)"; fi

clean: ## remove build/ and caches (keeps .venv)
	rm -rf build .pytest_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +

Makefile pyproject.toml: ;

%:
	@echo "make: unknown target '$@'" >&2
	@$(MAKE) --no-print-directory help >&2
	@exit 2
