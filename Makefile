# The README's commands. Everything a fresh machine needs is installed by `make install`.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
PYTEST_ARGS ?=
# The suite runs in this many processes (pytest-xdist), each test file in one of them so
# that a file's fixtures are built once: the machine's cores, at most 4.
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(min(4, len(os.sched_getaffinity(0))))")

.PHONY: install test demo bench tracer ptx clean

install:
	$(PIP) install -q -e '.[test]'

test:
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The paper-size Mamba2 and Mamba1 steps swept over tensor:vector ratios on the built-in
# model (`simfront demo --tiny` for the tiny steps).
demo:
	$(PYTHON) -m simfront demo --out out/demo

bench:
	$(PYTHON) bench/run_all.py

# Builds our NVBit tracer against the user's NVBit (never part of this repo).
tracer:
	$(MAKE) -C simfront/capture/tracer NVBIT_DIR=$(NVBIT_DIR)

# The shared-memory hold's kernels as PTX (the package loads it through the driver, so a
# user's machine needs no compiler); its first line names the source's sha256.
HOLD = simfront/workloads/cuda/shared_hold
ptx:
	nvcc -arch=sm_90 -ptx -O3 $(HOLD).cu -o $(HOLD).ptx.tmp
	{ echo "// from shared_hold.cu sha256 $$(sha256sum $(HOLD).cu | cut -d' ' -f1)"; \
	  cat $(HOLD).ptx.tmp; } > $(HOLD).ptx && rm $(HOLD).ptx.tmp

clean:
	rm -rf out build *.egg-info .pytest_cache
