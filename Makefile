# The two commands a newcomer needs: `make run` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck bench bench-mcp bench-replicas clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The interop tests' Node packages (tests/interop/node: MCP TypeScript SDK clients, Inspector,
# conformance suite, a pinned Node 22), exactly as package-lock.json says; again when it changes.
NODE_DIR := tests/interop/node
NODE_STAMP := $(NODE_DIR)/node_modules/.package-lock.json

$(NODE_STAMP): $(NODE_DIR)/package-lock.json
	@command -v npm >/dev/null || { echo "make test needs npm (Node.js) to install $(NODE_DIR)" >&2; exit 1; }
	npm ci --prefix $(NODE_DIR) --ignore-scripts --no-audit --no-fund --loglevel=error

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

run: $(STAMP)
	$(BIN)/python -m gateway.devrun

test: $(STAMP) $(NODE_STAMP) $(BROWSER) $(STRACE)
	$(BIN)/ruff check gateway tests bench examples
	$(BIN)/mypy
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check gateway tests bench
	$(BIN)/ruff format --check gateway tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/gate.py

bench-mcp: $(STAMP)
	$(BIN)/python bench/mcp_proxy.py

bench-replicas: $(STAMP)
	$(BIN)/python bench/replicas.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
