# Set-up and everyday commands. `make serve` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SRC := $(wildcard banditree banditree_cli service simulate tests benchmarks tools docs)

.PHONY: install serve test lint typecheck docs unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch is pinned to the CPU build 2.13.0 first, so nothing else pulls a CUDA build.
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[sim,dev]"
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/banditree serve

lint: $(STAMP)
	$(PY) -m ruff check $(SRC)
	$(PY) -m ruff format --check $(SRC)
	# the import layers (pyproject.toml [tool.importlinter]) and no import cycle at all
	PYTHONPATH=. $(VENV)/bin/lint-imports
	$(PY) -m tools.import_cycles

typecheck: $(STAMP)
	$(PY) -m mypy

# The docs site, reference pages generated from the code; --strict fails on any warning.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(PY) -m mkdocs build --strict --quiet

unit: $(STAMP)
	$(PY) -m pytest

test: lint typecheck docs unit

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build/site
