# Quick start: `make run` (the main job: xg2ref diff against xgrammar) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch is pinned in the same command so pip takes the CPU build on disk, never a CUDA one
	$(BIN)/pip install -q -e '.[test,oracle,torch]' 'torch==2.13.0'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/xg2ref diff --against xgrammar

test: $(STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
