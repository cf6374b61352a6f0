# The two set-up commands of the README are `make sample` and `make test`;
# both create the virtual environment on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
SAMPLE_OUT ?= sample-output

.PHONY: setup sample test flink kafka bench clean

# The install builds the native kernel (native/, cargo fetches its crates): rebuilt when its sources change.
$(BIN)/ngramflow: pyproject.toml setup.py native/Cargo.toml native/Cargo.lock $(wildcard native/src/*.rs)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# An editable install leaves the package's own modules uncompiled, and where PYTHONDONTWRITEBYTECODE is set
	@# every command compiled them again (50 ms of each start); Python recompiles any that change later.
	$(BIN)/python -m compileall -q ngramflow pipeline transforms schemas corpus query >/dev/null
	touch $@

setup: $(BIN)/ngramflow

# Import the bundled sample on the embedded runner, then query the result with DuckDB.
sample: setup
	$(BIN)/ngramflow import tests/data/sample/2012 --output $(SAMPLE_OUT) --overwrite
	$(BIN)/python tools/top_ngrams.py $(SAMPLE_OUT)

# The kernel's own unit tests (native/src, `cargo test`), built against the environment's Python, then the suite.
test: setup
	$(BIN)/ruff check .
	cd native && PYO3_PYTHON=$(abspath $(BIN))/python cargo test --release --quiet
	$(BIN)/python -m pytest -q tests

# The Java side of `--runner flink`, built once into ~/.cache/ngramflow/flink/ (Maven Central, PyPI);
# the Flink tests and the first Flink import do the same on their own.
flink: setup
	$(BIN)/ngramflow flink provision

# The Java side of Kafka (the local broker, Beam's KafkaIO for --from-kafka), into ~/.cache/ngramflow/kafka/
# (Maven Central); the Kafka tests, `kafka up` and the first queue-fed import do the same on their own.
kafka: flink
	$(BIN)/ngramflow kafka provision

clean:
	rm -rf $(VENV) $(SAMPLE_OUT) .pytest_cache *.egg-info

# Throughput and memory against DuckDB and plain decompression, and where the import's time goes; rewrites
# BENCHMARKS.md.
bench: setup
	$(BIN)/pip install --quiet py-spy==0.4.3  # the per-stage breakdown's profiler (benchmarks/stages.py)
	$(BIN)/python -m benchmarks.bench

# The embedded import and DuckDB on generated corpora of growing size (~15 min with the default
# sizes; corpora cached under $TMPDIR/ngramflow-scale); rewrites its table in BENCHMARKS.md.
.PHONY: bench-scale
bench-scale: setup
	$(BIN)/python -m benchmarks.scale

# KenLM's lmplz (built from kpu/kenlm into ~/.cache/ngramflow/kenlm on first use) against corpus.text,
# import and mkn on generated English text at three sizes, orders 3 and 5; rewrites its BENCHMARKS.md table.
.PHONY: bench-mkn
bench-mkn: setup
	$(BIN)/python -m benchmarks.mkn
