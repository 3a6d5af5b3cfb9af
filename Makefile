# The README's two set-up commands are `make demo` and `make test`; each creates .venv and installs
# the project first, so a fresh machine needs nothing but Python 3.11+ and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test demo lint dev docs bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "wastewatch needs Python 3.11 or newer, found " + sys.version' 
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q -n auto --dist loadfile

demo: $(STAMP)
	$(BIN)/wastewatch demo --dir demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Dagster UI on http://127.0.0.1:3000 with the instance config in dagster.yaml (pool limits).
dev: $(STAMP)
	mkdir -p .dagster && cp dagster.yaml .dagster/dagster.yaml
	DAGSTER_HOME=$(CURDIR)/.dagster $(BIN)/dagster dev -w workspace.yaml

docs: $(STAMP)
	$(BIN)/python -m rules docs > docs/rules.md
	$(BIN)/python -m pipelines.schema_docs > docs/schema.md

bench: $(STAMP)
	$(BIN)/python bench/ingest.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis demo .dagster
