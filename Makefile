# The two commands a newcomer needs: `make run` and `make test`. Both create .venv when missing.
# `make run` installs only what serving needs; `make test` adds the dev extras (test tools, linters,
# type checker, Playwright). Each has its own stamp: a run-only install never lets `make test` skip
# the dev extras, and a dev install (a superset) also counts as the run install.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test test-newest-sdk lint typecheck bench bench-mcp bench-replicas bench-smoke clean

$(BIN)/python:
	@echo "make: creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)

# pip's own lines (Collecting, Downloading, Installing) are the progress: nothing is silenced.
$(RUN_STAMP): pyproject.toml | $(BIN)/python
	@echo "make run: installing Warrant and what serving needs into $(VENV) (once, and again when pyproject.toml changes)"
	$(PIP) install --progress-bar on -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	@echo "make test: installing Warrant with its dev extras into $(VENV) (once, and again when pyproject.toml changes)"
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --progress-bar on -e '.[dev]'
	touch $@ $(RUN_STAMP)

# The interop tests' Node packages (tests/interop/node: MCP TypeScript SDK clients, Inspector,
# conformance suite, a pinned Node 22), exactly as package-lock.json says; again when it changes.
NODE_DIR := tests/interop/node
NODE_STAMP := $(NODE_DIR)/node_modules/.package-lock.json

$(NODE_STAMP): $(NODE_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "make test needs npm (Node.js) to install $(NODE_DIR)" >&2; exit 1; }
	npm ci --prefix $(NODE_DIR) --ignore-scripts --no-audit --no-fund --loglevel=error

# The Python agent frameworks of tests/interop/test_python_agents.py, each lock file of
# tests/interop/python/ in a venv of its own under .venv-interop/ (the frameworks' MCP SDK need not
# be the gateway's: langchain-mcp-adapters requires mcp<2), installed once and again when the lock
# file changes. Exactly the lock (--no-deps), then `pip check` that it is complete.
INTEROP_PY := tests/interop/python
INTEROP_VENVS := .venv-interop
PY_AGENTS := $(patsubst $(INTEROP_PY)/%.txt,$(INTEROP_VENVS)/%/.installed,$(wildcard $(INTEROP_PY)/*.txt))

$(INTEROP_VENVS)/%/.installed: $(INTEROP_PY)/%.txt
	@echo "installing the agent frameworks of $< into $(INTEROP_VENVS)/$*"
	rm -rf $(INTEROP_VENVS)/$*
	$(PYTHON) -m venv $(INTEROP_VENVS)/$*
	$(INTEROP_VENVS)/$*/bin/pip install --quiet --disable-pip-version-check --no-deps -r $<
	$(INTEROP_VENVS)/$*/bin/pip check --disable-pip-version-check
	touch $@

# The operator console's browser tests (tests/browser/) drive Debian's Chromium through Playwright's
# `executable_path`: a fresh machine has no browser, and Playwright must not download one (`playwright
# install` reaches a CDN; the machine reaches only package registries). Installed from Debian's
# packages when missing: non-interactive (no debconf prompt can stall), quiet (about 50 s here).
# WARRANT_SKIP_BROWSER=1 skips both the install and the browser tests.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
BROWSER := $(if $(filter 1,$(WARRANT_SKIP_BROWSER)),,$(CHROMIUM))

$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "the browser tests need Chromium at $(CHROMIUM); or set WARRANT_SKIP_BROWSER=1" >&2; exit 1; }
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null

# The Claude Code tests (tests/interop/test_claude_code.py) record every connection the CLI makes with
# strace, and fail on any beyond the test's loopback servers; installed from Debian's packages when
# missing.
STRACE := /usr/bin/strace

$(STRACE):
	@command -v apt-get >/dev/null || { echo "the Claude Code tests need strace at $(STRACE)" >&2; exit 1; }
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null

run: $(RUN_STAMP)
	$(BIN)/python -m gateway.cli.devrun

# Two pytest-xdist workers: the suite's time on a two-core machine (pyproject.toml, dev extras).
TEST_WORKERS ?= 2
# Line coverage of gateway/ in the test processes, printed after the tests (the modules not fully
# covered; [tool.coverage] in pyproject.toml). `make test COVERAGE=` switches it off: its cost is in
# docs/testing.md, "Coverage".
COVERAGE ?= --cov --cov-report=term:skip-covered

test: $(DEV_STAMP) $(NODE_STAMP) $(PY_AGENTS) $(BROWSER) $(STRACE)
	$(BIN)/ruff check gateway tests bench examples
	$(BIN)/mypy
	$(BIN)/pytest -q -n $(TEST_WORKERS) $(COVERAGE)

# The differential tests (marked `differential`: each accelerator of gateway/accelerators.py against
# the SDK's or the library's own path) against the newest final `mcp` release the package index
# offers, beyond pyproject.toml's upper bound if need be, in a venv of its own: the project, its
# `otel` extra (the tracing test) and the test tools, once (again when pyproject.toml changes),
# then `mcp` upgraded on every run. Outside the accelerators' declared range the tests check that
# the fence said so and that the slow paths serve, the same. CI runs it after `make test`.
NEWEST_SDK_VENV := .venv-newest-sdk
NEWEST_SDK_PIP := $(NEWEST_SDK_VENV)/bin/python -m pip --disable-pip-version-check
NEWEST_SDK_STAMP := $(NEWEST_SDK_VENV)/.installed
DIFFERENTIAL_TESTS := tests/unit/test_accelerators.py tests/unit/test_quick_schema.py \
	tests/mcp/test_mcp_fastpath.py tests/adapters/test_mcp_lean_http.py tests/adapters/test_mcp_http11.py

$(NEWEST_SDK_STAMP): pyproject.toml
	@echo "make test-newest-sdk: installing Warrant and the test tools into $(NEWEST_SDK_VENV)"
	rm -rf $(NEWEST_SDK_VENV)
	$(PYTHON) -m venv $(NEWEST_SDK_VENV)
	$(NEWEST_SDK_PIP) install --quiet -e '.[otel]' 'pytest>=8.3' 'anyio>=4.4' 'hypothesis>=6.100' 'pytest-xdist>=3.6'
	touch $@

test-newest-sdk: $(NEWEST_SDK_STAMP)
	$(NEWEST_SDK_PIP) install --quiet --upgrade mcp
	@$(NEWEST_SDK_VENV)/bin/python -c "import importlib.metadata as m; print('make test-newest-sdk: mcp', m.version('mcp'))"
	$(NEWEST_SDK_VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) -p no:cacheprovider -m differential $(DIFFERENTIAL_TESTS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check gateway tests bench
	$(BIN)/ruff format --check gateway tests bench

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

bench: $(DEV_STAMP)
	$(BIN)/python bench/gate.py

bench-mcp: $(DEV_STAMP)
	$(BIN)/python bench/mcp_proxy.py

bench-replicas: $(DEV_STAMP)
	$(BIN)/python bench/replicas.py

# Every bench script once with --smoke (tests/bench/, also part of `make test`): does each still run?
bench-smoke: $(DEV_STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) -m bench --durations=0 tests/bench

clean:
	rm -rf $(VENV) $(INTEROP_VENVS) $(NEWEST_SDK_VENV) .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.*
