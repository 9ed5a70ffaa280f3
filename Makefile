# Proofloop: `make run` starts everything on the embedded default; `make test` runs the whole suite.
# Both create .venv and install what they need on first use.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
GRAPHIQL_ASSETS := web/static/graphiql/vendor/graphiql.min.js
CONTRACT ?= ../shared/api.graphql
CHECK_CONTRACT ?= ../shared/tools/check_contract.py

.PHONY: install run test suite test-fast test-loaded lint typecheck schema schema-check docs bench demo clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

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

install: $(STAMP) $(GRAPHIQL_ASSETS)

run: install
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

# the whole suite: the static checks run beside the tests (`make -j`; about 20 s of one core, while the
# tests start), and make fails if either does
test: install $(CLIENT_CHECKS)
	@$(MAKE) --no-print-directory -j 4 lint typecheck schema-check suite

# pytest in TEST_PROCESSES processes on two cores: most tests wait on real deadlines (1 s intervals) and
# leave the CPU idle, so six fill the two cores where four leave a quarter idle (docs/testing.md has the
# figures); --dist loadfile keeps each file's tests, and so its module fixtures (servers, private
# databases), in one process; --no-loadscope-reorder hands the files out in collection order, which is
# longest first (tests/support/durations.py)
TEST_PROCESSES ?= 6
# bytecode is cached even where PYTHONDONTWRITEBYTECODE is set: the run starts a few hundred interpreters,
# and compiling the service's modules costs each of them a quarter of a second of CPU
suite: install $(CLIENT_CHECKS)
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder

# while editing: the static checks and the unit tests (marked `unit`: they start no API or worker process;
# about half a minute; only tests/operations/test_outages.py reaches PostgreSQL)
test-fast: install lint typecheck schema-check
	$(BIN)/pytest -n 2 -m unit tests

# the suite as CI's neighbours run it: one spinning process per core beside it (run before each submission)
test-loaded: install
	$(BIN)/python -m bench.cpu_hog -- $(MAKE) test

bench: install
	$(BIN)/python -m bench

demo: install
	$(BIN)/proofloop demo

clean:
	rm -rf $(VENV) var .mypy_cache .ruff_cache build *.egg-info graphiql/node_modules tests/clients/node_modules web/static/graphiql/vendor
