# sweeper: `make sweep` runs a real sweep offline; `make test` runs the tests.
# Both create the project-local virtual environment first (torch CPU build, then the project).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
SWEEP := $(VENV)/bin/sweep
TORCH_VERSION ?= 2.13.0
STAMP := $(VENV)/.installed
OUT ?= runs/default
PYTEST_ARGS ?=

.PHONY: install sweep test test-all test-lowest test-newest versions-venv report published-report bench lint clean

$(STAMP): pyproject.toml tests/versions/default.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: the CPU build; an open range would pull a multi-GB CUDA build.
	$(PY) -m pip install -q torch==$(TORCH_VERSION)
	# Every later install keeps that torch (timm, open_clip, ... would otherwise replace it),
	# with the torchvision / torchaudio releases that install beside it.
	grep -v '^torch==' tests/versions/default.txt > $(VENV)/constraints.txt
	echo "torch==$(TORCH_VERSION)" >> $(VENV)/constraints.txt
	$(PY) -m pip install -q -c $(VENV)/constraints.txt -e '.[dev,libraries,ray,lowering,quantization]'
	touch $(STAMP)

install: $(STAMP)

# A real sweep on the embedded default (the transformers zoo, tiny weights, no network).
sweep: install
	$(SWEEP) --top 50 --device trnsim --source zoo --out $(OUT)

# In parallel, one worker per core (the tests of one group, such as those sharing a Ray
# session or the browser, keep to one worker: tests/conftest.py's SERIAL_GROUPS);
# TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= auto
test: install
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadgroup --durations=10 $(PYTEST_ARGS)

test-all: install
	$(PY) -m pytest -q $(PYTEST_ARGS)

report: install
	$(SWEEP) report $(OUT)

# The published report: the shared top-1,000 Hub snapshot on trnsim, tiny weights, every
# blocker per model. Resumes if interrupted; `sweep report reports/top1000-trnsim` rebuilds
# report.md, details/, index.html (the searchable page), charts and Parquet from the committed records alone.
SHARED ?= ../shared
published-report: install
	$(SWEEP) --device trnsim --catalog $(SHARED)/catalogs/hub-top1000-2025-03.csv --collect-all --no-report --out reports/top1000-trnsim
	$(SWEEP) --device trnsim --dtype bfloat16 --catalog $(SHARED)/catalogs/hub-top1000-2025-03.csv --collect-all --no-report --out reports/top1000-trnsim-bf16
	# Each reproducer the reports link, run again: the reports mark one that no longer reproduces.
	-$(SWEEP) check-repros reports/top1000-trnsim
	-$(SWEEP) check-repros reports/top1000-trnsim-bf16
	$(SWEEP) report reports/top1000-trnsim
	$(SWEEP) report reports/top1000-trnsim-bf16 --against reports/top1000-trnsim

# The declared ranges, tested: the wheel installed (not the source tree) into a venv holding
# every floor of pyproject.toml (tests/versions/lowest.txt: torch 2.9, transformers 5.0, ...)
# or the newest releases (tests/versions/newest.txt: torch 2.15), then the tests that need no
# Torch-MLIR (its build is made for torch 2.13). Downloads a CUDA build of torch (~4 GB).
# Not part of `make test` or CI; see the README for how long each takes.
VERSIONS_TESTS ?= tests/core tests/sources tests/report tests/materialize tests/libraries tests/devices tests/executors
test-lowest:
	$(MAKE) versions-venv VERSIONS=lowest
test-newest:
	$(MAKE) versions-venv VERSIONS=newest

VERSIONS ?= lowest
VVENV := .venv-$(VERSIONS)
versions-venv:
	rm -rf $(VVENV) build/wheel
	$(PYTHON) -m venv $(VVENV)
	$(VVENV)/bin/python -m pip install -q --upgrade pip
	# The machine's pip may cap torch (a constraint file in its config): this file replaces it.
	PIP_CONSTRAINT=tests/versions/$(VERSIONS).txt $(VVENV)/bin/python -m pip install -q torch
	$(VVENV)/bin/python -m pip wheel -q --no-deps -w build/wheel .
	PIP_CONSTRAINT=tests/versions/$(VERSIONS).txt $(VVENV)/bin/python -m pip install -q "$$(ls build/wheel/sweeper-*.whl)[dev,libraries,ray,quantization]"
	$(VVENV)/bin/python -m pip list 2>/dev/null | grep -iE '^(torch|torchvision|torchaudio|transformers|huggingface.hub|ray|datasets|pandas|timm|diffusers|peft) '
	# The checkout joins sys.path after site-packages (its tests import each other), so the
	# tests import sweeper from the installed wheel; pytest, not python -m pytest, keeps the
	# working folder off the front of sys.path.
	echo "$(CURDIR)" > "$$($(VVENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/zz_checkout_tests.pth"
	cd / && $(CURDIR)/$(VVENV)/bin/python -c 'import sweeper; print("sweeper from", sweeper.__file__)'
	$(VVENV)/bin/pytest -q -m "not slow" -p no:cacheprovider $(VERSIONS_TESTS) $(PYTEST_ARGS)

bench: install
	$(PY) benchmarks/run_all.py

lint: install
	$(PY) -m pip install -q ruff
	$(VENV)/bin/ruff check sweeper tests benchmarks

clean:
	rm -rf $(VENV) .venv-lowest .venv-newest build runs .pytest_cache
