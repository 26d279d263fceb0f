# Quick start: `make demo` runs segtool on sample_data/, `make test` runs the fast tier of the tests.
# `make check` runs every test (what CI runs: .ci/run).  Each creates .venv/ with everything needed on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
KAFKA := sample_data/kafka
TXN := $(KAFKA)/c04-transactions/data/c04-txn-0

# the full tier's marks (pyproject.toml); the fast tier is every test without one of them
FAST := not slow and not spark and not cluster and not browser and not fuzz
# one pytest worker per core (pytest-xdist); a module's tests stay on one worker, so its fixtures
# (a Spark session, the corpus scanned) are made once
XDIST := -n auto --dist loadfile

.PHONY: demo test check bench install docs

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[test,spark]'
	touch $(STAMP)

install: $(STAMP)

# Each example prints its exit code after it (the contract: 0 clean, 1 problems or nothing found,
# 2 unreadable); `show WHICH N CMD...` keeps the first/last N lines of stdout, not the exit code of
# `| head`.  Outputs go to a temporary folder removed at the end, however the demo ends.
demo: $(STAMP)
	@work=$$(mktemp -d); trap 'rm -rf "$$work"' EXIT; \
	show() { which=$$1; lines=$$2; shift 2; "$$@" > "$$work/stdout"; code=$$?; \
	         if [ "$$which" = all ]; then cat "$$work/stdout"; else $$which -n "$$lines" "$$work/stdout"; fi; \
	         echo "(exit $$code)"; }; \
	echo "== segtool dump (text) of a transactional Kafka segment, first lines"; \
	show head 8 $(BIN)/segtool dump $(TXN)/00000000000000000000.log; \
	echo "== segtool dump --format kafka: kafka-dump-log's own output, byte for byte"; \
	show all 0 $(BIN)/segtool dump --format kafka $(TXN)/00000000000000000000.txnindex; \
	echo "== segtool dump of a segment with a zero-filled tail: stops and says where (exit 1)"; \
	show tail 2 $(BIN)/segtool dump --shallow $(KAFKA)/c11c-zero-tail-64k/data/c01-plain-0/00000000000000000000.log; \
	echo "== segtool verify of a segment with one flipped byte: where Kafka's recovery would cut it (exit 1)"; \
	show all 0 $(BIN)/segtool verify sample_data/kafka/c11a-crc-byte-flip/data; \
	echo "== segtool salvage of the same partition: every valid batch written back with its indexes (exit 1: damage)"; \
	show head 4 $(BIN)/segtool salvage sample_data/kafka/c11a-crc-byte-flip/data --out "$$work/salvaged"; \
	echo "== segtool lookup --offset inside a compaction gap: the next record, as a fetch returns it"; \
	show all 0 $(BIN)/segtool lookup $(KAFKA)/c07-compacted/data/c07-compact-0 --offset 3000; \
	echo "== segtool lookup --timestamp max-timestamp (Kafka's ListOffsets), as JSON"; \
	show all 0 $(BIN)/segtool lookup $(KAFKA)/c07-compacted/data/c07-compact-0 --timestamp max-timestamp --json; \
	echo "== segtool dump of a RocketMQ CommitLog file, last lines"; \
	show tail 2 $(BIN)/segtool dump sample_data/rocketmq/kill9-abort/store/commitlog/00000000000000000000

# docs/schemas/ from the output declarations, and docs/usage.md's examples rerun on sample_data/
# (tests/test_json_output.py and tests/test_docs_usage.py fail when either drifts)
docs: $(STAMP)
	$(BIN)/python -m segtool.ops.output_schema docs/schemas
	$(BIN)/python -m segtool.findings docs/formats.md
	$(BIN)/python docs/generate_usage.py

# the layers contract in pyproject.toml first, then the tests: the fast tier (no Spark, no browser,
# no 20,000-input fuzzing pass, few real processes) ...  segtool's bytecode is compiled first: where
# PYTHONDONTWRITEBYTECODE is set every process the tests start would compile it again (about 0.1 s each)
test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m compileall -q segtool
	$(BIN)/python -m pytest -q $(XDIST) -m "$(FAST)"

# ... or all of them (CI)
check: $(STAMP)
	$(BIN)/lint-imports
	@# the report's pages are opened in Debian's chromium (tests/test_report.py skips without it)
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 \
		|| echo "no chromium: the report's browser tests will skip"
	$(BIN)/python -m compileall -q segtool
	$(BIN)/python -m pytest -q $(XDIST)

# Compiled bytecode first, as an installed wheel has it: this environment sets
# PYTHONDONTWRITEBYTECODE, and cold-start timings would otherwise include compiling segtool.
bench: $(STAMP)
	$(BIN)/python -m compileall -q segtool
	$(BIN)/python -m pytest -q -s tests/bench
