# The README's commands. Everything a fresh machine needs is installed by `make install`.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
PYTEST_ARGS ?=

.PHONY: install test demo bench tracer clean

install:
	$(PIP) install -q -e '.[test]'

test:
	$(PYTHON) -m pytest -q $(PYTEST_ARGS)

demo:
	$(PYTHON) -m simfront demo --out out/demo

bench:
	$(PYTHON) bench/run_all.py

# Builds our NVBit tracer against the user's NVBit (never part of this repo).
tracer:
	$(MAKE) -C simfront/capture/tracer NVBIT_DIR=$(NVBIT_DIR)

clean:
	rm -rf out build *.egg-info .pytest_cache
