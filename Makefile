# Two entry points for a fresh machine:
#   make demo  -- create the venv, install, convert a bundled example, show diff and findings
#                 (from source: it does not wait for the compiled modules)
#   make test  -- create every environment the suite needs and run the whole suite
# Heavy installs (TensorFlow + Horovod build, code-server, Chromium) are cached under
# .cache/ (ignored), so a second run is fast; a first run works from nothing.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The hot modules compiled by Cython (horovodize.native): rebuilt when a source changes; a
# stale or missing build only means those modules run from their .py (never a wrong answer).
NATIVE := server/horovodize/_native/manifest.json

.PHONY: demo test test-setup quick-tiers editor-env test-fast test-horovod test-stack2 test-vscode venv native hvd-env hvd-env-tfnew hvd-smoke-tfnew vscode-env vsix bench clean

# The venv in two steps: what the demo runs (the package, from source: seconds), then what
# the suite, the bench and the compiled modules need on top.
BASE   := $(VENV)/.installed-base

$(BASE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==25.3
	$(PY) -m pip install -q -e .
	touch $(BASE)

$(STAMP): $(BASE)
	$(PY) -m pip install -q -e '.[test,ws,bench,native]'
	touch $(STAMP)

venv: $(STAMP)

# (~80 s on two cores; without a C compiler it says why and the pure modules stay in use)
$(NATIVE): $(STAMP) scripts/build_native.py $(wildcard server/horovodize/*.py server/horovodize/*/*.py)
	$(PY) scripts/build_native.py

native: $(NATIVE)

# The demo runs from source: it waits for no compiled module (make native builds them).
demo: $(BASE)
	@echo "== horovodize check examples/train_tape.py"
	@# check exits 1 when it reports findings (as here): only 2 (an error) fails the demo.
	@$(VENV)/bin/horovodize check examples/train_tape.py || [ $$? -eq 1 ]
	@echo
	@echo "== horovodize convert --diff examples/train_tape.py"
	@$(VENV)/bin/horovodize convert --diff examples/train_tape.py

# The self-contained VS Code extension (server bundled): vscode-client/horovodize-0.1.0.vsix.
vsix:
	cd vscode-client && npm ci --no-audit --no-fund && npm run package

# The Horovod run environment (Python 3.11, tensorflow-cpu 2.15.1, horovod 0.28.1 + Gloo).
hvd-env:
	bash scripts/hvd_env.sh

# The second stack, the newest Horovod 0.28.1 builds against (docs/stacks.md): Python 3.11,
# tensorflow-cpu 2.21.0, Keras 3.15.1, tf_keras 2.21.0, horovod 0.28.1 from its sdist with
# xla_mpi_ops.cc's includes patched and Debian's highwayhash/farmhash headers. Not part of `make test`. One build job at low priority
# (HVD_ENV_JOBS=2 to use both cores). Build log: .cache/hvd-venv-tfnew.build.log.
HVD_ENV_JOBS ?= 1
hvd-env-tfnew:
	HVD_ENV_JOBS=$(HVD_ENV_JOBS) nice -n 19 bash scripts/hvd_env.sh tf-new

# Its Keras 3 smoke test on 2 ranks (scripts/hvd_smoke_keras3.py: broadcast, allreduce with a
# GradientTape, the Keras 3 optimizer, DistributedGradientTape, horovod.tensorflow.keras).
hvd-smoke-tfnew: hvd-env-tfnew
	PATH="$(CURDIR)/.cache/hvd-venv-tfnew/bin:$$PATH" KERAS_BACKEND=tensorflow \
	    timeout 600 .cache/hvd-venv-tfnew/bin/horovodrun --gloo -np 2 -H localhost:2 \
	    python scripts/hvd_smoke_keras3.py

# code-server, Chromium, playwright-core and the packaged .vsix for the real-editor test.
vscode-env:
	bash scripts/vscode_env.sh

# HOROVODIZE_EXPECT_NATIVE: tests/test_native.py fails when the compiled modules did not build.
# The whole suite in three passes:
# 1. two lines side by side: the Horovod environment (downloads, then a C++ build: only the
#    Horovod runs need it), and the project venv, its compiled modules, the editor's environment
#    and then the quick tiers on both cores (pytest-xdist, one file per worker). From nothing,
#    the Horovod build took ~10 min before the quick tiers could start; now they share it.
# 2. the Horovod runs three at a time (a run spends much of its time starting TensorFlow and
#    meeting at the rendezvous: three keep both cores ~90% busy, 17 min for 71 runs, where two
#    left a quarter idle);
# 3. the real editor alone (code-server wants one port).
# A failing pass stops the target. Their apt steps take turns on .cache/apt.lock; output line by line.
QUICK := -m "not horovod and not vscode"
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 -Oline hvd-env quick-tiers
	HOROVODIZE_EXPECT_NATIVE=1 $(PY) -m pytest -n 3 --dist load --durations=25 -m "horovod and not stack2 and not stack_tfnew"
	HOROVODIZE_EXPECT_NATIVE=1 $(PY) -m pytest -m vscode

quick-tiers: editor-env
	HOROVODIZE_EXPECT_NATIVE=1 $(PY) -m pytest -n 2 --dist loadfile --durations=25 $(QUICK)

# Every environment the suite needs, in two lines side by side: the Horovod environment (a
# TensorFlow install and a Horovod build), and the project venv, its compiled modules, then the
# editor's (code-server, Chromium, the .vsix, which bundles the server's tree: after the compiled
# modules are in it).
test-setup:
	$(MAKE) --no-print-directory -j2 -Oline hvd-env editor-env

editor-env: $(NATIVE)
	$(MAKE) --no-print-directory vscode-env

# The quick tiers only (no Horovod runs, no browser): for the edit-test loop.
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile --durations=25 $(QUICK)

# The Horovod run tier only: converted programs on 2 ranks (horovodrun --gloo), three at a time.
test-horovod: $(STAMP) hvd-env
	$(PY) -m pytest -n 3 --dist load --durations=25 -m "horovod and not stack2 and not stack_tfnew"

# The second stack's runs (TF 2.21 + Keras 3.15 + tf_keras 2.21, horovod 0.28.1 patched;
# docs/stacks.md), 2 ranks, weights equal: Keras 3 programs converted with --keras-target keras3
# and their hand-distributed twins (docs/keras3.md, marker stack_tfnew), Keras 2 programs converted
# with --keras-target tf_keras under TF_USE_LEGACY_KERAS=1, and the doctor's verdicts (marker
# stack2). A Horovod build (~11 min on one core), so not part of `make test`.
test-stack2: $(STAMP) hvd-env-tfnew
	$(PY) -m pytest -m "stack2 or stack_tfnew"

# The real-editor test only (code-server + headless Chromium).
test-vscode: $(STAMP) vscode-env
	$(PY) -m pytest -m vscode tests/vscode

# The protocol benchmark against ruff's server, same run, 1k/10k/50k lines: p50/p95/open/RSS,
# the ratios, and issue 36's targets for the pure-Python server (the `pure` row).
bench: $(STAMP) $(NATIVE)
	$(PY) bench/lsp_latency.py --pure

clean:
	rm -rf $(VENV) build *.egg-info server/horovodize/_native .cache/native-build
