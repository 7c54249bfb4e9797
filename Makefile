# trainforge: every set-up step lives here so a fresh clone needs nothing installed by hand.
# `make demo` compiles the examples; `make test` runs the whole suite (CI runs exactly that).

PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test test-fast k8s-assets world-assets cluster controller schema fault bench-compiler bench-controller clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip
	@$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $@

venv: $(STAMP)

demo: $(STAMP)
	@$(BIN)/python -m compiler.demo examples build

k8s-assets:
	@bash testworld/build-assets.sh >/dev/null

# every binary of the test world (testworld/gobuild.py: control plane, kube-scheduler,
# kube-controller-manager, kwok, kustomize, ...), built once into ~/.cache/trainforge/
world-assets: $(STAMP)
	@$(BIN)/python -m testworld build

test: $(STAMP) k8s-assets
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not fault"
	@echo "--- the controller tests again, in upstream's order (train-controller --no-pods-first)"
	TRAINFORGE_TEST_UPSTREAM_ORDER=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m "not fault" tests/controller

test-fast: $(STAMP)
	TRAINFORGE_SKIP_CONTROLPLANE=1 $(BIN)/python -m pytest -q -m "not controlplane"

# WORLD= (empty) for the bare control plane; parts from testworld/world.py PARTS
WORLD ?= gc,scheduler,kwok
cluster: $(STAMP) k8s-assets
	@$(BIN)/python -m testworld cluster --with "$(WORLD)"

schema: $(STAMP)
	$(BIN)/train-compile schema -o schemas/
	$(BIN)/python -m schemas.reference
	$(BIN)/python -m controller.crds
	$(BIN)/python -m controller.admission_policies

fault: $(STAMP) k8s-assets
	$(BIN)/python -m pytest -q -p no:cacheprovider -m fault

bench-compiler: $(STAMP)
	$(BIN)/python -m bench.compiler_bench

bench-controller: $(STAMP) k8s-assets
	$(BIN)/python -m bench.controller_bench

clean:
	rm -rf build .pytest_cache
