# Proofloop: `make run` starts everything on the embedded default; `make test` runs the whole suite.
# Both create .venv and install what they need on first use, the versions pinned in uv.lock: `make run`
# the service alone, `make test` the service and its test tools (`make lock` after editing pyproject.toml).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# uv installs from the lock file (in seconds where pip took minutes); it lives in a venv of its own, since
# syncing .venv to the lock removes whatever the lock does not name
UV_VERSION := 0.13.10
TOOLS := .tools
UV := $(TOOLS)/bin/uv
UV_STAMP := $(TOOLS)/.uv-$(UV_VERSION)
# uv takes the machine's Python (PYTHON) and never downloads one of its own
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
RUNTIME_STAMP := $(VENV)/.runtime-stamp
DEV_STAMP := $(VENV)/.dev-stamp
GRAPHIQL_ASSETS := web/static/graphiql/vendor/graphiql.min.js
CONTRACT ?= ../shared/api.graphql
CHECK_CONTRACT ?= ../shared/tools/check_contract.py

.PHONY: install install-service run test suite test-fast unit test-loaded test-each test-sample lint lock schema-changes schema-release \
	lock-check upgrade-check typecheck schema schema-check docs bench demo clean

$(UV_STAMP):
	rm -rf $(TOOLS)
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	touch $@

# the service alone (`make run`); --inexact keeps the test tools of an earlier `make test`
$(RUNTIME_STAMP): pyproject.toml uv.lock $(UV_STAMP)
	$(UV) sync --locked --inexact --quiet --python $(PYTHON)
	touch $@

# the service and its test tools, exactly the lock's (--locked: a lock stale against pyproject.toml fails)
$(DEV_STAMP): pyproject.toml uv.lock $(UV_STAMP)
	$(UV) sync --locked --extra dev --quiet --python $(PYTHON)
	touch $@ $(RUNTIME_STAMP)

# uv.lock anew from pyproject.toml, keeping every version that still satisfies it (`uv lock --upgrade`
# or `--upgrade-package NAME` moves them)
lock: $(UV_STAMP)
	$(UV) lock --python $(PYTHON)

lock-check: $(UV_STAMP)
	@$(UV) lock --check --quiet --python $(PYTHON) \
		|| (echo "uv.lock is stale against pyproject.toml: run 'make lock' and commit it" && exit 1)

# the newest versions pyproject.toml allows, in a scratch environment under var/, against the static checks
# and the unit tests: what the next `make lock --upgrade` would bring, seen before it bites
UPGRADE := var/upgrade-check
upgrade-check: $(DEV_STAMP)
	rm -rf $(UPGRADE) && mkdir -p $(UPGRADE)
	$(UV) pip compile pyproject.toml --extra dev --upgrade --quiet --no-header --no-annotate \
		--python $(PYTHON) -o $(UPGRADE)/newest.txt
	$(UV) pip freeze --quiet --python $(BIN)/python | grep '==' | LC_ALL=C sort > $(UPGRADE)/locked.txt
	grep '==' $(UPGRADE)/newest.txt | LC_ALL=C sort > $(UPGRADE)/newest-sorted.txt
	@echo "what the newest allowed versions change on this machine (< locked, > newest):"
	@diff $(UPGRADE)/locked.txt $(UPGRADE)/newest-sorted.txt | grep '^[<>]' || echo "  nothing: the lock is current"
	$(UV) venv --quiet --python $(PYTHON) $(UPGRADE)/venv
	$(UV) pip install --quiet --python $(UPGRADE)/venv/bin/python -r $(UPGRADE)/newest.txt -e .
	$(UPGRADE)/venv/bin/ruff check .
	$(UPGRADE)/venv/bin/lint-imports
	$(UPGRADE)/venv/bin/mypy --cache-dir $(UPGRADE)/mypy .
	$(UPGRADE)/venv/bin/pytest -n 2 -m unit tests

# GraphiQL's browser bundles, pinned in graphiql/package-lock.json, served by the API (no CDN)
# (without npm the API still runs; its /graphql page then says how to install them)
$(GRAPHIQL_ASSETS): graphiql/package.json graphiql/package-lock.json graphiql/vendor.mjs
	@if command -v npm >/dev/null; then \
		cd graphiql && npm ci --no-audit --no-fund --loglevel=error && npm run --silent vendor; \
	else echo "warning: GraphiQL's assets need Node.js 18+ and npm; the API runs without them"; fi

# Reference clients the API tests run against a live server (graphql-http's audit, graphql-sse)
CLIENT_CHECKS := tests/clients/node_modules/.package-lock.json
$(CLIENT_CHECKS): tests/clients/package.json tests/clients/package-lock.json
	@if command -v npm >/dev/null; then \
		cd tests/clients && npm ci --no-audit --no-fund --loglevel=error; \
	else echo "warning: the client conformance tests need Node.js 18+ and npm"; fi

install: $(DEV_STAMP) $(GRAPHIQL_ASSETS)

install-service: $(RUNTIME_STAMP) $(GRAPHIQL_ASSETS)

run: install-service
	$(BIN)/proofloop dev

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy .

schema: install
	$(BIN)/proofloop export-schema --output schema.graphql

# docs/configuration.md is generated from settings.py (tests/operations/test_configuration_doc.py checks it)
docs: install
	$(BIN)/proofloop config-doc --output docs/configuration.md

# The committed schema.graphql must be what the code exports, and must honour the contract.
schema-check: install
	@$(BIN)/proofloop export-schema | diff -u schema.graphql - \
		|| (echo "schema.graphql is stale: run 'make schema' and commit it" && exit 1)
	@if [ -f $(CHECK_CONTRACT) ]; then $(BIN)/python $(CHECK_CONTRACT) schema.graphql $(CONTRACT); \
		else echo "contract checker not found at $(CHECK_CONTRACT): skipped"; fi

# Nothing a released client uses may break (docs/schema/changes.md): graphql-inspector diffs schema.graphql
# against the last released schema; `make schema-release` makes the current one the released one
schema-changes: install $(CLIENT_CHECKS)
	@$(BIN)/python -m harness.schema_changes

schema-release: schema
	cp schema.graphql docs/schema/released.graphql

# the whole suite: the static checks run beside the tests (`make -j`; about 20 s of one core, while the
# tests start), and make fails if either does
test: install $(CLIENT_CHECKS)
	@$(MAKE) --no-print-directory -j 4 lock-check lint typecheck schema-check schema-changes suite

# pytest in TEST_PROCESSES processes on two cores: most tests wait on real deadlines (1 s intervals) and
# leave the CPU idle, so six fill the two cores where four leave a quarter idle (docs/testing.md has the
# figures); --dist loadfile keeps each file's tests, and so its module fixtures (servers, private
# databases), in one process; --no-loadscope-reorder hands the files out in collection order, which is
# longest first (tests/support/durations.py)
TEST_PROCESSES ?= 6
# bytecode is cached even where PYTHONDONTWRITEBYTECODE is set: the run starts a few hundred interpreters,
# and compiling the service's modules costs each of them a quarter of a second of CPU
suite: install $(CLIENT_CHECKS)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m harness.reaper -- \
		$(BIN)/pytest -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder

# every test file in a pytest run of its own (for the record: about 40 minutes on two cores); CI runs a
# sample of them after the suite
test-each: install $(CLIENT_CHECKS)
	$(BIN)/python -m harness.run_alone --jobs 2

TEST_SAMPLE ?= 6
test-sample: install $(CLIENT_CHECKS)
	$(BIN)/python -m harness.run_alone --jobs 2 --sample $(TEST_SAMPLE)

# while editing: the static checks beside the unit tests (marked `unit`: they start no server process and
# need no PostgreSQL or Redis)
test-fast: install
	@$(MAKE) --no-print-directory -j 4 lint typecheck schema-check schema-changes unit

unit: install
	$(BIN)/pytest -n 2 -m unit -q tests

# the suite as CI's neighbours run it: one spinning process per core beside it (run before each submission)
test-loaded: install
	$(BIN)/python -m bench.cpu_hog -- $(MAKE) test

bench: install
	$(BIN)/python -m bench

demo: install-service
	$(BIN)/proofloop demo

clean:
	rm -rf $(VENV) $(TOOLS) var .mypy_cache .ruff_cache build *.egg-info graphiql/node_modules tests/clients/node_modules web/static/graphiql/vendor
