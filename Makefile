# The two entry points of the README: `make demo` and `make test`.
# Both create .venv with the Python found as $(PY) and install edgestats with the dev extras,
# pinned by constraints.txt (torch 2.13.0 CPU build, tensorflow-cpu).

PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.edgestats-installed
DB ?= results.duckdb

.PHONY: demo test install system-deps bench clean

$(BIN)/python:
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "edgestats needs Python >= 3.10; run: make PY=python3.11 ...")'
	$(PY) -m venv $(VENV)

$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -c constraints.txt -e '.[dev]'
	touch $@

install: $(STAMP)

# Spark (for the export read-back test) needs a Java runtime; CI machines start without one.
system-deps:
	@command -v java >/dev/null 2>&1 || { \
	  echo "installing a Java runtime for the Spark read-back test"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends default-jre-headless; }

test: install system-deps
	$(BIN)/python -m pytest

demo: install
	rm -f $(DB) $(DB).wal
	$(BIN)/edgestats doctor
	$(BIN)/edgestats import $(DB) sample_data/pcamp_inference.csv --kind inference
	$(BIN)/edgestats import $(DB) sample_data/dlaas_tf_mnist_cpu.csv --kind training
	$(BIN)/edgestats sql $(DB) "SELECT device, framework, model, latency_median_ms, rss_peak_bytes FROM run_summary WHERE kind = 'inference' ORDER BY latency_median_ms"
	$(BIN)/edgestats sql $(DB) "SELECT batch_size, iterations, training_time_s, accuracy_pct FROM training_summary ORDER BY batch_size, iterations" --format markdown
	$(BIN)/edgestats export $(DB) --parquet results-parquet --overwrite
	@echo "results: $(DB) (query it: $(BIN)/edgestats sql $(DB) 'SELECT * FROM run_summary'); Parquet: results-parquet/"

bench: install
	$(BIN)/python bench/ingest.py

clean:
	rm -rf $(VENV) build dist *.egg-info results-parquet $(DB) $(DB).wal
