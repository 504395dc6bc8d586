# Two entry points: `make demo` and `make test`. Both create .venv on first use from
# python3 alone, then install exactly what uv.lock pins.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
STAMP := $(VENV)/.synced-dev
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
export NO_MKDOCS_2_WARNING := 1

.PHONY: demo test lint typecheck docs pytest bench clean

$(UV):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==0.13.8

$(STAMP): $(UV) uv.lock pyproject.toml packages/std-tools/pyproject.toml packages/toolkit/pyproject.toml
	$(UV) sync --locked --python $(BIN)/python
	touch $@

demo: $(STAMP)
	$(BIN)/python examples/agent_demo.py

test: $(STAMP)
	$(MAKE) --no-print-directory pytest lint typecheck docs

pytest: $(STAMP)
	$(BIN)/pytest packages/std-tools/tests packages/toolkit/tests

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy packages/std-tools/src packages/toolkit/src

docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet --site-dir .site

bench: $(UV)
	$(UV) sync --locked --python $(BIN)/python --group bench
	rm -f $(STAMP)
	@echo "Peers installed. Run a benchmark, e.g.: $(BIN)/python benchmarks/bench_list_skills.py"

clean:
	rm -rf $(VENV) .site .mypy_cache .ruff_cache .pytest_cache
