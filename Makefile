# trainforge: every set-up step lives here so a fresh clone needs nothing installed by hand.
# `make demo` compiles the examples; `make test` runs the whole suite (CI runs exactly that).

PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
CACHE  := $(or $(TRAINFORGE_CACHE),$(HOME)/.cache/trainforge)
# uv, pinned in pyproject.toml ([tool.uv] required-version), pip-installed into a tools venv
UV_VERSION := $(shell sed -n 's/^required-version = "==\(.*\)"$$/\1/p' pyproject.toml)
UV     := $(CACHE)/tools/uv-$(UV_VERSION)/bin/uv
export TRAINFORGE_UV := $(UV)
# uv syncs this venv (not one of its own) and never downloads a Python
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))
export UV_PYTHON_DOWNLOADS := never

.PHONY: venv lock install-check demo docs docs-build demo-gitops e2e e2e-assets test test-fast k8s-assets world-assets cluster controller schema fault bench-compiler bench-controller bench-scale bench-progress bench-curve parity parity-assets clean

$(UV):
	@$(PYTHON) -m venv $(CACHE)/tools/uv-$(UV_VERSION)
	@$(CACHE)/tools/uv-$(UV_VERSION)/bin/python -m pip install -q --disable-pip-version-check uv==$(UV_VERSION)

# the project's venv holds exactly uv.lock (runtime + test extras, the project editable);
# an existing .venv is synced in place. --locked: a lock that no longer matches
# pyproject.toml is an error (run `make lock`), never silently re-resolved.
$(STAMP): pyproject.toml uv.lock | $(UV)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(UV) sync -q --locked --extra test --python $(BIN)/python
	@touch $@

venv: $(STAMP)

# re-resolve uv.lock to the newest versions pyproject.toml allows, and the own pinned environments
# of the Kubeflow SDK (tests/controller/sdk) and of the documentation site's generator (docs/); commit them
lock: | $(UV)
	$(UV) lock --upgrade
	$(UV) pip compile -q --upgrade --generate-hashes --python-version 3.11 \
	    tests/controller/sdk/requirements.in -o tests/controller/sdk/requirements.txt
	$(UV) pip compile -q --upgrade --generate-hashes --python-version 3.11 \
	    docs/requirements.in -o docs/requirements.txt

# the built wheel in clean venvs with runtime deps only: locked (pip, as the Dockerfile),
# newest and oldest allowed; train-compile on the examples, a train-controller lifecycle
install-check: $(STAMP) k8s-assets
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/install

demo: $(STAMP)
	@$(BIN)/python -m compiler.cli.demo examples build

# the documentation site (mkdocs.yml, docs/): served on 127.0.0.1:8000 as you edit, or built strictly
# into site/ as make test builds it; mkdocs runs from a venv of its own (testworld/docsite.py)
docs: $(STAMP)
	@$(BIN)/python -m testworld docs serve

docs-build: $(STAMP)
	@$(BIN)/python -m testworld docs build

k8s-assets:
	@bash testworld/build-assets.sh >/dev/null

# every binary of the test world (testworld/gobuild.py: control plane, kube-scheduler,
# kube-controller-manager, kwok, kustomize, ...), built once into ~/.cache/trainforge/
world-assets: $(STAMP)
	@$(BIN)/python -m testworld build

# what the GitOps end to end needs (tests/e2e, make demo-gitops): the engines built from the
# Go module proxy (Flux, Argo CD, Kubeflow Trainer v2 + JobSet, Kueue v0.17 and v0.19, the mpi-operator),
# redis-server from Debian (apt-get when missing), cached in ~/.cache/trainforge/
E2E_PARTS := k8s kube-scheduler kube-controller-manager kwok kustomize kustomize-controller source-controller argocd redis-server jobset trainer kueue kueue-0.19 mpi-operator training-operator
e2e-assets: $(STAMP)
	@$(BIN)/python -m testworld build $(E2E_PARTS)

# real Flux and Argo CD sync the compiled examples from a git repo on 127.0.0.1 (part of make test)
e2e: e2e-assets
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/e2e

# watch the same loop: the jobs go Created, Running, Succeeded; everything is stopped at the end
demo-gitops: e2e-assets
	@$(BIN)/python -m testworld demo-gitops

# every test; a cold run builds the engines only the GitOps, admission and parity tests use in the
# background (nice 19) while the others run (testworld/suite.py says the order and why)
test: $(STAMP)
	$(BIN)/python -m testworld suite

# the differential test against the upstream Go operator (tests/parity, part of make test):
# the operator v1.9.4 and v1.8.1 (MXJob), kwok, kube-scheduler and the GC, built once into ~/.cache/trainforge/
PARITY_PARTS := k8s kube-scheduler kube-controller-manager kwok training-operator training-operator-mxjob
parity-assets: $(STAMP)
	@$(BIN)/python -m testworld build $(PARITY_PARTS)

parity: parity-assets
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/parity

test-fast: $(STAMP)
	TRAINFORGE_SKIP_CONTROLPLANE=1 $(BIN)/python -m pytest -q -m "not controlplane"

# WORLD= (empty) for the bare control plane; parts from testworld/world.py PARTS;
# BAD_IMAGES='regex' for the images whose pull fails (testworld/kwok.py; BAD_IMAGES= for none)
WORLD ?= gc,scheduler,kwok
cluster: $(STAMP) k8s-assets
	@$(BIN)/python -m testworld cluster --with "$(WORLD)" $(if $(filter undefined,$(origin BAD_IMAGES)),,--bad-images '$(BAD_IMAGES)')

schema: $(STAMP)
	$(BIN)/python -m tests.schemas.openapi_pod_template
	$(BIN)/python -m tests.schemas.trainer_runtime_crd
	$(BIN)/train-compile schema -o schemas/
	$(BIN)/python -m compiler.cli.reference
	$(BIN)/python -m controller.generators.crds
	$(BIN)/python -m controller.generators.admission_policies

fault: $(STAMP) k8s-assets
	$(BIN)/python -m pytest -q -p no:cacheprovider -m fault

bench-compiler: $(STAMP)
	$(BIN)/python -m bench.compiler_bench $(ARGS)

bench-controller: $(STAMP) k8s-assets
	$(BIN)/python -m bench.controller_bench

# both controllers on a real pod lifecycle: kube-scheduler + kwok, 500 nodes, 1,000 PyTorchJobs x 8 pods
# (ours, the upstream operator v1.9.4); --jobs/--pods-per-job/--nodes via ARGS="..."
bench-scale: $(STAMP) k8s-assets
	$(BIN)/python -m bench.scale_bench $(ARGS)

# what progress reports cost train-controller: 1,000 jobs x 8 pods, each pod reporting every 10 s for 10 minutes,
# against the same 10 minutes without reports, in one run (bench/progress_bench.py; ARGS="--jobs 100 --seconds 120")
bench-progress: $(STAMP) k8s-assets
	$(BIN)/python -m bench.progress_bench $(ARGS)

# ours alone at 250, 1,000, 2,000, 5,000 and 10,000 jobs x 8 pods (sizes that would not fit in memory are
# reported, not run); SIZES=250,1000 and ARGS="--bind ..." to choose; the 10,000-job curve of bench/README.md
# is ARGS="--bind --run-seconds forever" (~1 h on 2 cores)
SIZES ?= 250,1000,2000,5000,10000
bench-curve: $(STAMP) k8s-assets
	$(BIN)/python -m bench.scale_curve --sizes $(SIZES) $(ARGS)

clean:
	rm -rf build site .pytest_cache
