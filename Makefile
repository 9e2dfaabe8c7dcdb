# kafkalog: every set-up step lives here, so a fresh clone needs nothing installed by hand
# beyond the machine's Rust >= 1.89, Python >= 3.11, Java 17+ (Spark, so `make demo` and
# tests/spark; and the interop tests) and Maven (the interop tests). The venv's packages come
# from PyPI (pyproject.toml names each one once), the interop tests' Kafka jars from Maven
# Central.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.deps-stamp
NATIVE_STAMP := $(VENV)/.native-stamp
RUST_SOURCES := $(shell find rust -name '*.rs') Cargo.toml Cargo.lock pyproject.toml

export PYTHONDONTWRITEBYTECODE := 1

.PHONY: demo test test-rust test-python test-interop lint fmt bench bench-python bench-kafka fuzz soak clean

# The venv's packages: pyproject.toml's build backend ([build-system] requires), kafkalog's
# dependencies and the `dev` extra, read from that file (the extension itself is built once, by
# maturin develop below). kafkalog-dev.pth puts tests/ on the venv's path, so that the dev kit
# (tests/kit: the shared test helpers, the Kafka harness) imports as `kit` from the tests, the
# benches, subprocesses and Spark's Python workers.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PY) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb")); \
		print(*p["build-system"]["requires"], *p["project"]["dependencies"], \
		*p["project"]["optional-dependencies"]["dev"], sep="\n")' >$(VENV)/dev-requirements.txt
	$(PIP) install --quiet -r $(VENV)/dev-requirements.txt
	$(PY) -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "kafkalog-dev.pth") \
		.write_text(str(pathlib.Path("tests").resolve()) + "\n")'
	touch $@

# Release build of the extension, installed into the venv (maturin develop puts the .so in
# python/kafkalog/; stale copies are removed first). Then kafkalog-pyspark-bytecode.pth, which has
# Spark's Python workers import the installed pyspark (compiled) instead of its source-only
# pyspark.zip, which every worker compiled again (kafkalog.spark.pyspark_bytecode).
$(NATIVE_STAMP): $(STAMP) $(RUST_SOURCES)
	rm -f python/kafkalog/_native*.so
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin develop --release --quiet
	$(PY) -m kafkalog.spark.pyspark_bytecode
	touch $@

# The demo's Spark driver maps a class-data archive of the classes it loads (kafkalog.spark.class_data:
# built once per JDK and pyspark, by a small training run of the demo, about 45 s), so it starts in
# half the time.
demo: $(NATIVE_STAMP)
	$(PY) -m kafkalog.spark.class_data
	$(PY) -m kafkalog.demo $(DEMO_ARGS)

lint:
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features python -- -D warnings

test-rust:
	cargo test --quiet

test-python: $(NATIVE_STAMP)
	$(PY) -m mypy.stubtest kafkalog._native --allowlist tests/stubtest-allowlist.txt
	$(PY) -m mypy
	$(PY) -m pytest -q

# Everything: lint (fmt, clippy), the Rust tests, then the Python side (stubtest, mypy, pytest
# over tests/python and tests/spark) and the interop tests.
test: $(NATIVE_STAMP) lint test-rust test-python test-interop

# Real Apache Kafka 4.3.1 against kafkalog, both directions (needs Java 17+ and Maven; the Kafka
# jars come from Maven Central into tests/kit/jvm/.cache on first run). Part of `make test`;
# this target runs only them.
test-interop: $(NATIVE_STAMP)
	$(PY) -m pytest -q tests/interop

fmt:
	cargo fmt

bench: $(NATIVE_STAMP)
	cargo bench --bench log_bench
	cargo bench --bench recovery_bench
	cargo bench --bench cleaner_bench
	cargo bench --bench append_arrow_bench
	cargo bench --bench roll_bench
	$(PY) benches/bench_python.py
	$(PY) benches/bench_recovery.py
	$(PY) benches/bench_cleaner.py
	$(PY) benches/bench_read.py
	$(PY) benches/bench_read_committed.py
	$(PY) benches/bench_spark_read.py
	$(PY) benches/bench_spark_compact.py
	$(PY) benches/bench_append_arrow.py

bench-python: $(NATIVE_STAMP)
	$(PY) benches/bench_python.py

# kafkalog beside Apache Kafka's own storage classes on the same files, one machine, one run:
# UnifiedLog, LogSegment and FileRecords, idempotent leader appends included (bench_kafka.py,
# with benches/bench_workload.rs as kafkalog's side), LogManager start-up and crash recovery
# (bench_recovery.py), start-up of a transactional partition from its producer snapshot and by
# a full rebuild (bench_txn_startup.py) and the log cleaner (bench_cleaner.py); with them the
# rest of issue 17's figures, which have no Kafka side: append latency across rolls (roll_bench)
# and to_arrow beside the page-cache floor (bench_read.py). Needs Java 17+ and Maven like
# test-interop (the jars come from Maven Central into tests/kit/jvm/.cache on first run). Not
# part of `make test`.
bench-kafka: $(NATIVE_STAMP)
	$(PY) benches/bench_kafka.py
	$(PY) benches/bench_recovery.py --kafka
	$(PY) benches/bench_txn_startup.py
	$(PY) benches/bench_cleaner.py --kafka
	cargo bench --bench roll_bench
	$(PY) benches/bench_read.py

# The fuzz targets with 200,000 cases each. proptest runs from a fixed seed (the same cases every
# run, as in `make test`); `make fuzz PROPTEST_RNG_SEED=<n>` explores other cases.
fuzz:
	PROPTEST_CASES=200000 $(if $(PROPTEST_RNG_SEED),PROPTEST_RNG_SEED=$(PROPTEST_RNG_SEED)) cargo test --release --quiet fuzz_

# Crash and corruption soak: 500 SIGKILLs of a child process writing to a LogManager (`make
# test` runs 30), 500 of a compacting child (`make test`: 20), 300 of a child writing idempotent
# and transactional batches and markers (`make test`: 20), 200 damaged files per kind of
# file and damage (`make test`: 25), and the compaction and transaction models with 10x their
# examples. Not part of `make test` (its running time is in the closing notes of the session
# that last ran it).
soak: $(NATIVE_STAMP)
	KAFKALOG_CRASH_KILLS=500 KAFKALOG_CORRUPTION_CASES=200 KAFKALOG_CLEANER_CRASH_KILLS=500 KAFKALOG_SOAK=10 \
		KAFKALOG_TXN_CRASH_KILLS=300 \
		$(PY) -m pytest -q tests/python/test_crash_recovery.py tests/python/test_corruption.py \
		tests/python/test_cleaner_crash.py tests/python/test_compaction_model.py tests/python/test_txn_crash.py \
		tests/python/test_txn_model.py

clean:
	rm -rf $(VENV) target python/kafkalog/_native*.so
