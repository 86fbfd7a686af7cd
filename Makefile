# ibtool — the two commands a user needs are `make demo` and `make test`.
# Both set up what is missing first (Debian packages, .venv, the hdor plugin).

VENV    := .venv
IBTOOL  := $(VENV)/bin/ibtool
PYTEST  := $(VENV)/bin/pytest
DEMO    ?= demo
PYTEST_ARGS ?=
# test workers (pytest-xdist): tests/conftest.py keeps each file on one worker
TEST_JOBS ?= 2

.PHONY: setup plugin demo test test-full bench clean help

help:
	@echo "make demo   set up, then generate the CELLIA KNS (6-ary 2-direct, radix 8),"
	@echo "            emulate it in ibsim, route it with hdor, discover and verify it"
	@echo "make test   set up, then run the whole test suite (ibsim, sshd, slurm included;"
	@echo "            a fixed sample of the exhaustive parts: under 20 minutes)"
	@echo "make test-full  the same with the exhaustive parts whole (fault matrix, fuzzing,"
	@echo "            the biggest fabrics; about an hour)"
	@echo "make bench  set up, then run the benchmarks behind BENCHMARKS.md"
	@echo "make setup  install Debian packages and the Python package in $(VENV)"
	@echo "make plugin build opensm_plugin/libhdor.so"

setup:
	@scripts/setup.sh

plugin: setup
	@$(MAKE) -s -C opensm_plugin

demo: plugin
	@scripts/demo.sh $(DEMO)

# the 25 slowest tests are listed at the end: where the 20 minutes go
test: plugin
	$(PYTEST) -n $(TEST_JOBS) --dist loadfile --durations=25 $(PYTEST_ARGS)

test-full: plugin
	IBTOOL_TESTS=full IBTOOL_FAULT_MATRIX=full $(PYTEST) -n $(TEST_JOBS) --dist loadfile --durations=50 $(PYTEST_ARGS)

bench: plugin
	$(VENV)/bin/python perf/run.py

clean:
	-$(MAKE) -s -C opensm_plugin clean
	rm -rf $(DEMO) build
