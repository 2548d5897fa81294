# Two commands do all the set-up on a fresh machine (see README.md):
#   make run   - the main job on the embedded default
#   make test  - the project's test suite (what CI runs)
#   make test-fast - its fast tier while working: the tests not marked slow (no program started)
# Both create .venv when it is missing and install TorchCTS into it with torch pinned: an
# unpinned torch resolves to a multi-GB CUDA build. constraints.txt pins the versions the tests were
# verified with (a Hypothesis release can change what a derandomized run draws).

PYTHON ?= python3
VENV ?= .venv
TORCH_PIN ?= torch==2.13.0
PY := $(VENV)/bin/python
STAMP := $(VENV)/.torchcts-installed
RUN_DIR ?= results/make-run
# Bytecode: the tests start many interpreters at once (CLI runs, spawned workers, pytest-xdist workers). Left to
# themselves they race to write the same __pycache__ files, and CI's file system once served a half-written one
# ("EOFError: marshal data too short", stop 50). So `make test` compiles TorchCTS once, in one process, before
# pytest starts, and every interpreter under it reads that bytecode and writes none (PYTHONDONTWRITEBYTECODE=1).
COMPILE := $(PY) -m compileall -q -j 0 torchcts properties strategies tests
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`: one more than the usable cores, at most 4 (each worker holds torch and the
# OpInfo database, ~1-2 GiB): many slow tests wait on a child, a signal or a timeout, and a third worker on 2 cores
# fills those waits (measured on 2 cores: 3 workers 21 min 38 s, idle machine, 1.94 cores busy; 2 workers 32 min,
# 1.27 cores busy, beside one light job). TEST_WORKERS=0 runs the suite in one process
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1; print(min(4, n + 1))')

.PHONY: run test test-fast venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml plugins/faulty-autoload/pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -c constraints.txt "$(TORCH_PIN)" -e ".[dev]" -e plugins/faulty-autoload
	touch $(STAMP)

# The main job on the embedded default: a derandomized validation run of the harness against
# CPU itself (level 2, float32), from a freshly initialised manifest; results and the report
# (scorecard.md, report.html, junit.xml, summary.json, written by `run` itself) in $(RUN_DIR)/<run-id>/report/.
run: $(STAMP)
	$(PY) -m torchcts init --template minimal --device-name cpu --non-interactive --force --output $(RUN_DIR)/manifest.py
	$(PY) -m torchcts check-manifest --manifest $(RUN_DIR)/manifest.py
	$(PY) -m torchcts run --validation --derandomize --level 2 --dtype float32 --max-examples 10 \
		--manifest $(RUN_DIR)/manifest.py --results-dir $(RUN_DIR) --corpus-dir $(RUN_DIR)/corpus

test: $(STAMP)
	$(COMPILE)
	PYTHONDONTWRITEBYTECODE=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# The fast tier: unit and contract tests, in-process. A test that starts a program (the CLI, a spawned
# worker; a fork is none) or runs long is marked slow and left out; tests/conftest.py fails an unmarked test that starts one.
test-fast: $(STAMP)
	$(COMPILE)
	PYTHONDONTWRITEBYTECODE=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal -m "not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info results/make-run
