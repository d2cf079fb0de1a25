# Quick start: `make run` (the main job: xg2ref diff against xgrammar) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install clean notebooks peers

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch is pinned in the same command so pip takes the CPU build on disk, never a CUDA one
	$(BIN)/pip install -q -e '.[test,oracle,torch,bench,hf,notebooks,cluster]' 'torch==2.13.0'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/xg2ref diff --against xgrammar

# The suite runs twice: compiled, then as plain Python (NUMBA_DISABLE_JIT=1: the same kernels
# interpreted; `jit_only` tests, full-vocabulary work, are skipped there). Then the kernels'
# property tests once more with every array index checked (NUMBA_BOUNDSCHECK=1, compiled afresh
# in a scratch cache): an index out of bounds raises there instead of corrupting memory. Each run
# spreads its tests over TEST_JOBS processes (pytest-xdist; default: one per core), a file to a
# process, so that a module's fixtures (the JSON-Schema-Test-Suite's run, the integration runs
# both of their tests read) are made once. The Ray
# campaigns (tests/test_cluster.py, compiled only) run on their own after the compiled run, on one
# local Ray that has the machine to itself: beside the other tests, on a loaded 2-core machine, a
# campaign's actors waited minutes for a CPU.
TEST_JOBS ?= auto
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile
test: $(STAMP)
	$(PYTEST) --durations=20 --ignore=tests/test_cluster.py
	$(BIN)/python -m pytest -q --durations=5 tests/test_cluster.py
	NUMBA_DISABLE_JIT=1 $(PYTEST) -p no:cacheprovider --durations=20 --ignore=tests/test_cluster.py
	cache=$$(mktemp -d) && NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=$$cache $(PYTEST) -p no:cacheprovider \
		tests/test_repetition.py tests/test_mask_cache.py tests/test_properties.py tests/test_configurations.py \
		tests/test_entry_build.py tests/test_slices.py tests/test_background.py tests/test_batch_matcher.py tests/test_context_expansion.py \
		tests/test_pda.py tests/test_token_classes.py tests/test_wgrammar.py; \
		status=$$?; rm -rf $$cache; exit $$status

# XGrammar-1 itself (xgrammar 0.1.19, a pushdown automaton) in a side environment of its own, for the
# optional column of `xg2ref bench xg1-ablation` and `earley-vs-pda` (xg2ref/tools/bench/xg1_peer.py);
# never built in CI. Its package name is xgrammar's, so it cannot live beside 0.2.8.
PEERS := benchmarks/peers/.venv-xg1
peers: $(PEERS)/.installed
$(PEERS)/.installed:
	$(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/pip install -q --no-deps 'xgrammar==0.1.19'
	$(PEERS)/bin/pip install -q 'torch==2.13.0' pydantic numpy sentencepiece tiktoken 'transformers>=4.38.0' ninja
	touch $@

# Execute each notebook's jupytext source into the .ipynb beside it (NB=notebooks/03_*.py for one).
NB ?= notebooks/[0-9]*.py
notebooks: $(STAMP)
	for f in $(NB); do $(BIN)/python -c "import sys, jupytext, nbclient, nbformat; \
	nb = jupytext.read(sys.argv[1]); \
	nb.metadata['kernelspec'] = {'name': 'python3', 'language': 'python', 'display_name': 'Python 3'}; \
	nbclient.NotebookClient(nb, kernel_name='python3', timeout=600, resources={'metadata': {'path': '.'}}).execute(); \
	nbformat.write(nb, sys.argv[1][:-3] + '.ipynb')" $$f || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
