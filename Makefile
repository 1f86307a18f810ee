# mytorch book: one entry point for setting up, checking, building and testing.
# Run `make` or `make help` to see the targets.

SHELL := bash
.DEFAULT_GOAL := help
.SUFFIXES:

VENV    ?= .venv
JOBS    ?= 2
PORT    ?= 8888
BOOTPY  := $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null)

# The Python that runs everything: .venv's, built on first use from pyproject.toml. Where an
# environment already holds the book (Binder: binder/start sets MYTORCH_PYTHON), use that one and
# build no second environment.
ifneq ($(strip $(MYTORCH_PYTHON)),)
PY        := $(MYTORCH_PYTHON)
STAMP     := env-ready
LAB_STAMP := env-ready
WEB_STAMP := env-ready
else
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
LAB_STAMP := $(VENV)/.installed-lab
WEB_STAMP := $(VENV)/.installed-web
endif
# PyTorch, the oracle the chapters compare with, always as its CPU-only build (about 200 MB, not the
# several-GB CUDA build a plain `pip install torch` takes on Linux).
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
BOOKKIT := $(PY) -m bookkit

ifeq ($(BOOTPY)$(MYTORCH_PYTHON),)
$(error no python3.11 or python3 on PATH: install Python 3.11, then run make again)
endif
USAGE := usage: make <target> [JOBS=2|auto] [PORT=8888] [LANG=both|zh|en]; `make help` lists the targets

# `make lab LANG=zh`: the reading language. LANG is also the locale variable of every shell, so only
# a LANG given on make's command line counts (BOOK_LANG=zh works too), and JupyterLab gets a sane
# locale back.
ifeq ($(origin LANG),command line)
BOOK_LANG := $(LANG)
override LANG := C.UTF-8
LAB_ENV := LANG=C.UTF-8
endif
BOOK_LANG ?= both
ifeq ($(filter $(BOOK_LANG),both zh en),)
$(info $(USAGE))
$(error LANG must be both, zh or en (got '$(BOOK_LANG)'); e.g. make lab LANG=zh)
endif

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

.PHONY: help venv env-ready lab test lint book exercises colab check mine grade bench-grade bench clean

help: ## 列出所有命令 / list the targets
	@echo "用法 / usage: make <target> [JOBS=2|auto] [PORT=8888] [LANG=both|zh|en]"
	@echo
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  \1\t/' | expand -t 14
	@echo
	@echo "学生：make lab 读书做题，make check 检查练习。 / Students: make lab to read and do the exercises, make check to check them."

ifeq ($(STAMP),$(VENV)/.installed)
# Students (make lab, check, mine): a light environment, the `lab` extra: mytorch and bookkit, what
# the chapters import, JupyterLab, what `make mine` tests with, and CPU-only PyTorch.
$(LAB_STAMP): pyproject.toml
	@test -x $(PY) || $(BOOTPY) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip || echo "note: could not upgrade pip (offline?); going on with this one"
	$(PY) -m pip install --no-deps 'torch==2.13.0' --index-url $(TORCH_CPU_INDEX)
	$(PY) -m pip install 'torch==2.13.0' -e '.[lab]'
	@touch $@
# The web edition (make book) adds Sphinx and its theme.
$(WEB_STAMP): $(LAB_STAMP)
	$(PY) -m pip install -e '.[lab,web]'
	@touch $@
# Contributors (make test, lint, colab, grade, bench): everything, CuPy, Playwright and MPI included.
$(STAMP): $(LAB_STAMP)
	$(PY) -m pip install -e '.[dev,lab]'
	@touch $@
endif

venv: $(STAMP) ## 建好 .venv，装上一切 / create .venv and install everything (again when pyproject.toml changes)

env-ready:
	@$(PY) -c 'import mytorch, bookkit' 2>/dev/null || { \
	  echo "MYTORCH_PYTHON=$(PY) cannot import mytorch and bookkit: run \`$(PY) -m pip install -e '.[book]'\`, or unset MYTORCH_PYTHON to use .venv" >&2; exit 1; }

lab: $(LAB_STAMP) ## 学生：在 JupyterLab 里读书（LANG=zh|en 只显示一种语言）/ students: the book in JupyterLab (LANG=zh|en: one language)
	$(LAB_ENV) $(BOOKKIT) lab --port $(PORT) --lang $(BOOK_LANG)

check: $(LAB_STAMP) ## 学生：运行练习的可见测试，打印结果表 / students: run your exercises' visible tests, print a verdict table [CH=02]
	$(BOOKKIT) grade $(if $(CH),--chapter "$(CH)")

mine: $(LAB_STAMP) ## 学生：用你自己的代码跑本书的测试和各章 / students: run the book's tests and chapters on your own pieces [MINE=exercises] [CH=02]
	$(BOOKKIT) mine $(if $(MINE),--source "$(MINE)") $(if $(CH),--chapter "$(CH)") --jobs $(if $(filter auto,$(JOBS)),$(shell nproc),$(JOBS))

lint: $(STAMP) ## 作者：快速同步检查（不执行）/ contributors: the fast sync checks of the sources (nothing runs)
	$(dir $(PY))lint-imports --no-cache
	$(BOOKKIT) check-bilingual
	$(BOOKKIT) check-teaches
	$(BOOKKIT) check-links
	$(BOOKKIT) exercises --check
	$(BOOKKIT) colab --check
	$(BOOKKIT) check-outputs
	$(BOOKKIT) check-leaks

test: lint ## 作者：全部检查和测试（CI 跑的就是它）/ contributors: lint, every test incl. nbval, then the library's tests on the solutions' pieces (what CI runs)
	$(PY) -m pytest -n $(JOBS)
	@echo "== the library's tests again, every reference solution plugged in as a student's piece =="
	MYTORCH_MINE="$(CURDIR)/solutions" MYTORCH_MINE_QUIET=1 $(PY) -m pytest -n $(JOBS) -m library -q -p no:cacheprovider

book: $(WEB_STAMP) ## 网页版：build/web/index.html（离线可读）/ the web edition: build/web/index.html (works offline)
	$(BOOKKIT) book

exercises: $(STAMP) ## 由 solutions/ 生成 exercises/ / regenerate exercises/ from solutions/
	$(BOOKKIT) exercises

colab: $(STAMP) ## 执行各章，写入 notebooks/{zh,en}/ / execute the chapters into notebooks/{zh,en}/ (Colab, Binder, GitHub)
	$(BOOKKIT) colab

grade: $(STAMP) ## 教师：批改 / instructors: grade SUBMISSIONS=<dir> [OUT=grades] [JOBS=2] [TIMEOUT=10 s/test] [UNSAFE_NO_SANDBOX=1]
	@if [ -z "$(SUBMISSIONS)" ]; then \
	  echo "usage: make grade SUBMISSIONS=<dir> [OUT=grades] [JOBS=2] [TIMEOUT=10]" >&2; \
	  echo "  <dir> holds one folder per student, named by the student's id, with their exercises/ files" >&2; \
	  exit 2; fi
	$(BOOKKIT) grade-class "$(SUBMISSIONS)" --out "$(OUT)" --jobs $(if $(filter auto,$(JOBS)),$(shell nproc),$(JOBS)) --timeout $(TIMEOUT) $(if $(filter 1 yes true,$(UNSAFE_NO_SANDBOX)),--unsafe-no-sandbox)

bench-grade: $(STAMP) ## 批改的速度 / time `make grade` on N generated submissions with JOBS=2 (N=100)
	$(BOOKKIT) bench-grade --n $(N) --jobs 2

bench: $(STAMP) ## 性能对比 / run the benchmarks (python -m bench)
	@if [ -f bench/__main__.py ]; then $(PY) -m bench; else echo "no benchmarks yet (bench/__main__.py does not exist)"; fi

clean: ## 删除 build/ 和缓存 / remove build/ and caches (keeps .venv)
	rm -rf build .pytest_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +

Makefile pyproject.toml: ;

%:
	@echo "make: unknown target '$@'" >&2
	@$(MAKE) --no-print-directory help >&2
	@exit 2
