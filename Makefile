# Set-up and everyday commands. `make serve` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SRC := $(wildcard banditree banditree_cli service simulate tests benchmarks tools docs)
# the compiled kernel's sources: a change rebuilds it (the editable install compiles it in place)
KERNEL := setup.py $(wildcard banditree/kernel/*.c banditree/kernel/*.h)

.PHONY: install serve test lint typecheck docs unit sanitize bench clean

$(STAMP): pyproject.toml $(KERNEL)
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

# The kernel built with AddressSanitizer and UndefinedBehaviorSanitizer in a scratch copy
# of the package (the installed build is left alone), and the kernel's tests run against
# it. CPython is not built with ASan: its runtime is preloaded, and leaks (CPython's own,
# at exit) are not reported; any other report aborts the run (pytest -s: the report reaches
# the terminal; an overflow injected in decide is reported with its line).
SANITIZE_DIR := build/sanitize
sanitize: $(STAMP)
	rm -rf $(SANITIZE_DIR) && mkdir -p $(SANITIZE_DIR)
	cp -r setup.py pyproject.toml README.md banditree tests $(SANITIZE_DIR)/
	rm -f $(SANITIZE_DIR)/banditree/kernel/*.so
	cd $(SANITIZE_DIR) && BANDITREE_SANITIZE=1 $(abspath $(PY)) setup.py -q build_ext --inplace
	cd $(SANITIZE_DIR) && LD_PRELOAD="$$($${CC:-gcc} -print-file-name=libasan.so)" \
		ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(abspath $(PY)) -m pytest -q -s -p no:cacheprovider tests/kernel

# make test: two phases, each with a run in front at normal priority and the rest beside
# it at nice 19, on the CPU it leaves.  First, in front, the tests outside tests/service on
# two workers, a file per worker at a time (they share no state across files, and no
# Redis); then, in front, the service's tests that time processes, kills and outages
# against the clock, in one process.  Beside both, started at once: the static checks
# (side by side), the kernel's tests against the sanitizers' build (the same -O2 build
# with ASan and UBSan) and the in-process route tests (tests/service/http and edge: own
# key prefixes, own ports).  Each background run writes its log under build/, printed
# whole when it fails.  `make unit` runs every test in one process against the installed
# build.
ROUTE_TESTS := tests/service/http tests/service/edge
test: $(STAMP)
	mkdir -p build; \
	nice -n 19 $(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck docs \
		> build/static-checks.log 2>&1 & checking=$$!; \
	nice -n 19 $(MAKE) --no-print-directory sanitize > build/sanitize.log 2>&1 & sanitizing=$$!; \
	nice -n 19 $(PY) -m pytest -q -p no:cacheprovider $(ROUTE_TESTS) \
		> build/route-tests.log 2>&1 & routes=$$!; \
	$(PY) -m pytest -n 2 --dist loadfile --ignore=tests/service --ignore=tests/kernel; \
	status=$$?; \
	$(PY) -m pytest tests/service $(ROUTE_TESTS:%=--ignore=%) || status=1; \
	ended() { if wait "$$1"; then tail -n "$$2" "$$3"; \
		else cat "$$3"; echo "$$3: failed"; status=1; fi; }; \
	ended $$checking 2 build/static-checks.log; \
	ended $$routes 1 build/route-tests.log; \
	ended $$sanitizing 3 build/sanitize.log; \
	exit $$status

bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build/site build/sanitize banditree/kernel/*.so
