# Two entry points: `make demo` and `make test` (`make conformance`: the official MCP
# conformance suite, see docs/conformance.md). Both create .venv on first use from
# python3 alone, then install exactly what requirements.lock pins (versions and hashes).
# `make lock` re-resolves the dependencies and rewrites the two lock files.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
STAMP := $(VENV)/.synced-dev
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
export NO_MKDOCS_2_WARNING := 1

.PHONY: demo test lint typecheck docs pytest conformance bench lock dist clean

# A .venv whose interpreter no longer starts (its Python was removed or upgraded) or is
# older than 3.11 is rebuilt from scratch instead of failing in every later step.
VENV_BROKEN := $(shell [ -d $(VENV) ] && ! $(BIN)/python -c \
	"import sys; sys.exit(sys.version_info < (3, 11))" >/dev/null 2>&1 && echo yes)
ifeq ($(VENV_BROKEN),yes)
.PHONY: $(UV)
endif

$(UV):
	@$(PYTHON) -c "import sys; sys.exit(0 if sys.version_info >= (3, 11) else \
	'doc-processing needs Python 3.11 or newer, but $(PYTHON) is ' + sys.version.split()[0] \
	+ '; run make with PYTHON= set to a newer interpreter, e.g. make test PYTHON=python3.12')"
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==0.13.8

# --compile-bytecode: every test starts Python processes of its own (servers, dpt-agent),
# and where PYTHONDONTWRITEBYTECODE is set none of them would keep what it compiled: each
# would compile the MCP SDK again (about 0.8 s of CPU a process).
$(STAMP): $(UV) requirements.lock
	$(UV) pip sync --quiet --compile-bytecode --python $(BIN)/python requirements.lock
	touch $@

demo: $(STAMP)
	$(BIN)/python examples/agent_demo.py

# --keep-going: a failing test does not hide what lint, typecheck and docs would say; make
# still exits non-zero when any of them failed. The four run side by side (the tests spend
# much of their time waiting for the processes they start, so ruff, mypy and the docs build
# fit in beside them); --output-sync prints each one's output whole, when it is done.
test: $(STAMP)
	$(MAKE) --no-print-directory --keep-going --jobs=4 --output-sync=target \
		pytest lint typecheck docs

# The packages' own modules are compiled too (only what changed since the last run).
pytest: $(STAMP)
	$(BIN)/python -m compileall -q packages/std-tools/src packages/toolkit/src >/dev/null
	$(BIN)/pytest -n 2 packages/std-tools/tests packages/toolkit/tests

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy packages/std-tools/src packages/toolkit/src

docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet --site-dir .site

# The official MCP conformance suite against the composed server and the toolkit's Agent as
# a host; installs the suite and Node 22 (npm packages, pinned) under .conformance/.
conformance: $(STAMP)
	$(BIN)/python conformance/run.py

bench: $(UV)
	$(UV) pip sync --quiet --python $(BIN)/python requirements-bench.lock
	rm -f $(STAMP)
	@echo "Peers installed. Run a benchmark, e.g.: $(BIN)/python benchmarks/bench_list_skills.py"

# Wheels and source distributions of both packages in dist/, checked by twine (metadata and
# the README as the package index would render it).
dist: $(STAMP)
	rm -rf dist
	$(UV) build --all-packages --out-dir dist --quiet
	$(BIN)/twine check --strict dist/*

# After changing a dependency in a pyproject.toml: resolve again and rewrite the locks.
lock: $(UV)
	$(UV) lock
	$(UV) export --frozen --no-emit-project --no-header -o requirements.lock >/dev/null
	$(UV) export --frozen --no-emit-project --no-header --all-groups -o requirements-bench.lock >/dev/null

clean:
	rm -rf $(VENV) .site .mypy_cache .ruff_cache .pytest_cache dist .conformance .peers
