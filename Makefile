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

.PHONY: install sweep test test-all report published-report bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: the CPU build; an open range would pull a multi-GB CUDA build.
	$(PY) -m pip install -q torch==$(TORCH_VERSION)
	# Every later install keeps that torch: timm, open_clip, ... would otherwise replace it.
	echo "torch==$(TORCH_VERSION)" > $(VENV)/constraints.txt
	$(PY) -m pip install -q -c $(VENV)/constraints.txt -e '.[dev,libraries]'
	touch $(STAMP)

install: $(STAMP)

# A real sweep on the embedded default (the transformers zoo, tiny weights, no network).
sweep: install
	$(SWEEP) --top 50 --device trnsim --source zoo --out $(OUT)

test: install
	$(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

test-all: install
	$(PY) -m pytest -q $(PYTEST_ARGS)

report: install
	$(SWEEP) report $(OUT)

# The published report: the shared top-1,000 Hub snapshot on trnsim, tiny weights, every
# blocker per model. Resumes if interrupted; `sweep report reports/top1000-trnsim` rebuilds
# report.md, index.html (the searchable page), charts and Parquet from the committed records alone.
SHARED ?= ../shared
published-report: install
	$(SWEEP) --device trnsim --catalog $(SHARED)/catalogs/hub-top1000-2025-03.csv --collect-all --no-report --out reports/top1000-trnsim
	$(SWEEP) report reports/top1000-trnsim
	$(SWEEP) --device trnsim --dtype bfloat16 --catalog $(SHARED)/catalogs/hub-top1000-2025-03.csv --collect-all --no-report --out reports/top1000-trnsim-bf16
	$(SWEEP) report reports/top1000-trnsim-bf16

bench: install
	$(PY) benchmarks/run_all.py

lint: install
	$(PY) -m pip install -q ruff
	$(VENV)/bin/ruff check sweeper tests benchmarks

clean:
	rm -rf $(VENV) runs .pytest_cache
