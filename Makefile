# The README's two set-up commands are `make demo` and `make test`; each creates .venv and installs
# the project first, so a fresh machine needs nothing but Python 3.11+ and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# what the install takes on a fresh clone, said while pip runs (README.md, "Set up", has the measured figures)
INSTALL_TIME := 3 to 8 minutes
INSTALL_SIZE := 1.2 GB

.PHONY: test demo lint dev docs bench clean focus-validate

# pip prints each package it collects and installs; on a fresh machine this is the longest step.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "wastewatch needs Python 3.11 or newer, found " + sys.version'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing wastewatch and its dependencies into $(VENV): Dagster and its webserver, DuckDB, Polars,"
	@echo "pyarrow, boto3, pydantic, and for the tests pytest, moto, hypothesis, ruff and Playwright"
	@echo "(on a fresh clone about $(INSTALL_TIME) and $(INSTALL_SIZE) in $(VENV); measured figures in README.md)"
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar on -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder

demo: $(STAMP)
	$(BIN)/wastewatch --progress demo --dir demo
	@echo ""
	@echo "next, with the demo's config (demo/wastewatch.yaml; its Dagster runs are in demo/.dagster/):"
	@echo "  $(BIN)/wastewatch --config demo/wastewatch.yaml sql \"select rule_id, currency, count(*) as findings, sum(estimated_waste) as waste from findings where counted and week_start = (select max(week_start) from findings) group by all order by waste desc\""
	@echo "  make dev    # the Dagster UI on http://127.0.0.1:3000 with this config and the runs above"
	@echo "  open the report: $$(ls demo/reports/*/report.html | sort | tail -n 1)"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Dagster UI on http://127.0.0.1:$(PORT): config $$WASTEWATCH_CONFIG, else ./wastewatch.yaml, else the
# demo's; its Dagster instance is the one the CLI's runs use (.dagster/ beside the config). `exec` makes
# Dagster make's own child, so a SIGTERM to make reaches it.
PORT ?= 3000
dev: $(STAMP)
	exec $(BIN)/python -m pipelines.cli.dev --port $(PORT)

docs: $(STAMP)
	$(BIN)/python -m rules docs > docs/rules.md
	$(BIN)/python -m rules readme --write README.md
	$(BIN)/python -m pipelines.cli.schema_docs > docs/schema.md

# The FinOps Foundation's focus-validator (2.x validates FOCUS 1.2 and needs Python 3.12) over the FOCUS export
# of every billing fixture, in its own environment (it pins its own numpy and pyarrow); fails on any failure
# .ci/focus_validator_allowlist.csv does not list (docs/billing.md, "FOCUS validator").
FOCUS_VENV := .focus-venv
FOCUS_VALIDATOR_VERSION := 2.2.1

$(FOCUS_VENV)/.installed:
	@py="$$(.ci/find_python312.sh)" || exit 1; \
	echo "installing focus-validator $(FOCUS_VALIDATOR_VERSION) into $(FOCUS_VENV) with $$py"; \
	rm -rf $(FOCUS_VENV) && "$$py" -m venv $(FOCUS_VENV) && \
	$(FOCUS_VENV)/bin/python -m pip install --quiet --upgrade pip && \
	$(FOCUS_VENV)/bin/python -m pip install --quiet "focus-validator==$(FOCUS_VALIDATOR_VERSION)" "pyarrow<21" && \
	touch $@

focus-validate: $(STAMP) $(FOCUS_VENV)/.installed
	$(BIN)/python .ci/focus_validate.py --validator $(FOCUS_VENV)/bin/focus-validator

bench: $(STAMP)
	$(BIN)/python bench/ingest.py

clean:
	rm -rf $(VENV) $(FOCUS_VENV) .pytest_cache .ruff_cache .hypothesis demo .dagster
