# The two entry points of the README: `make demo` and `make test` (`make test-fast` for the pure tests).
# Both create .venv with the Python found as $(PY) and install edgestats with the dev extras,
# pinned by constraints.txt (torch 2.13.0 CPU build, tensorflow-cpu).

PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.edgestats-installed
DEMO_STAMP := $(VENV)/.edgestats-demo-installed
DB ?= results.duckdb
# llama.cpp's build for llama-cpp-python (below): not for the building CPU's every feature (GGML_NATIVE)
# but for AVX2: on a Xeon with AMX under a kernel or hypervisor that does not grant AMX to processes,
# the native build crashed in q8_0 generation (SIGSEGV: the llama.cpp tests died with their pytest
# worker, and the parallel lane then waited for it for ever). Give your own with LLAMA_CMAKE_ARGS=...
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: demo test test-fast test-highest test-lowest test-arm64 lint install install-demo compiler system-deps bench clean

$(BIN)/python:
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "the dev install needs Python >= 3.11 (the analysis side and the tests; the device side alone, pip install edgestats, runs on 3.10); run: make PY=python3.11 ...")'
	$(PY) -m venv $(VENV)

$(STAMP): pyproject.toml constraints.txt | $(BIN)/python compiler
	$(BIN)/python -m pip install --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -c constraints.txt -e '.[dev]'
	touch $@ $(DEMO_STAMP)

install: $(STAMP)

# The demo needs its sweep's frameworks and the analysis stack ([demo]), not the test tools: no pyspark
# (a 456 MB source build), playwright, hypothesis or build. A dev install covers it too.
$(DEMO_STAMP): pyproject.toml constraints.txt | $(BIN)/python compiler
	$(BIN)/python -m pip install --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -c constraints.txt -e '.[demo]'
	touch $@

install-demo: $(DEMO_STAMP)

# llama-cpp-python (the llamacpp extra, in [dev] and [demo]) has no Linux wheel: pip builds llama.cpp
# from its source with a C++ compiler (cmake and ninja come from PyPI), so the installs need one first
# (torch.compile's CPU kernels need it too); CI machines may start without it.
compiler:
	@command -v g++ >/dev/null 2>&1 || command -v clang++ >/dev/null 2>&1 || { \
	  echo "installing g++: pip builds llama-cpp-python from source, torch.compile builds CPU kernels"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends g++; }

# Spark (for the export read-back test) needs a Java runtime, the report's browser test
# Debian's Chromium (driven by playwright, offline), torch.compile on the CPU a C++ compiler
# (inductor builds the kernels it generates), and the paper tables' test pdflatex with booktabs
# (texlive-latex-recommended has booktabs.sty); CI machines may start without them.
system-deps: compiler
	@command -v java >/dev/null 2>&1 || { \
	  echo "installing a Java runtime for the Spark read-back test"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends default-jre-headless; }
	@test -x /usr/bin/chromium || { \
	  echo "installing Chromium for the report's headless-browser test"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; }
	@command -v pdflatex >/dev/null 2>&1 && kpsewhich booktabs.sty >/dev/null 2>&1 || { \
	  echo "installing pdflatex and booktabs for the LaTeX tables' test"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    texlive-latex-base texlive-latex-recommended; }
	@command -v debootstrap >/dev/null 2>&1 || { \
	  echo "installing debootstrap for make test-arm64's arm64 userland"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap; }

# Lanes (markers in pyproject.toml): test-fast runs the pure tests (no framework, Spark, browser or
# wheel build); test runs every test. Both spread over $(TEST_WORKERS) pytest-xdist workers
# (--dist loadgroup keeps the tests that share an xdist_group on one worker, one after another).
# The quiet tests assert a timing effect (a 10 % slowdown found significant), which a test on the
# other worker would drown in run-to-run noise: test runs them alone, after the parallel lane.
# Python's bytecode cache stays on for the tests even where the environment turns it off: the suite
# starts hundreds of edgestats processes (collect workers, CLI subprocesses), and each would compile
# every edgestats module it imports again (about 7 % of a framework test module's time here).
unexport PYTHONDONTWRITEBYTECODE

# The pure tests (no framework, Spark, Chromium or wheel build) run on the highest Python too; the fast
# lane is those less the slow ones (many processes or much data: seconds of CPU each), for a quick
# answer while working.
PURE_LANE := not frameworks and not spark and not browser and not packaging and not quiet
FAST_LANE := $(PURE_LANE) and not slow
TEST_WORKERS ?= auto

# Both lanes share one model cache (EDGESTATS_TEST_MODEL_CACHE, removed afterwards), so a model the
# parallel lane prepared is not prepared again by the quiet lane.
test: install system-deps lint
	@cache=$$(mktemp -d -t edgestats-test-models.XXXXXX) && trap 'rm -rf "$$cache"' EXIT && set -x && \
	EDGESTATS_TEST_MODEL_CACHE=$$cache $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not quiet" && \
	EDGESTATS_TEST_MODEL_CACHE=$$cache $(BIN)/python -m pytest -n 0 -m quiet

# ruff (pinned in constraints.txt, configured in pyproject.toml): lint and format check, in seconds.
# make test runs it first; `$(BIN)/ruff format .` and `$(BIN)/ruff check --fix .` mend most findings.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test-fast: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "$(FAST_LANE)"

# The highest supported Python (3.13): its own venv with the test-pure install (no frameworks: the
# CPU torch wheel is for 3.11 only), running the pure tests, slow ones included. PY_HIGHEST is found on PATH or under
# pyenv; a machine without it fails here rather than skipping the check.
PY_HIGHEST ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) $(shell command -v python3.13 2>/dev/null))
HIGHEST_VENV := .venv-highest
test-highest:
	@test -n "$(PY_HIGHEST)" && "$(PY_HIGHEST)" -c 'import sys; assert sys.version_info[:2] == (3, 13)' || { \
	  echo "test-highest: no Python 3.13 found (looked on PATH and under ~/.pyenv/versions); give one with PY_HIGHEST=/path/to/python3.13"; exit 1; }
	test -x $(HIGHEST_VENV)/bin/python || "$(PY_HIGHEST)" -m venv $(HIGHEST_VENV)
	$(HIGHEST_VENV)/bin/python -m pip install -q --upgrade pip
	$(HIGHEST_VENV)/bin/python -m pip install -q -c constraints.txt -e '.[test-pure]'
	$(HIGHEST_VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "$(PURE_LANE)" -p no:cacheprovider

# The lowest declared versions: the direct dependencies of the test-pure install (with [onnx] and
# [openvino], whose runtimes the repeated-flags collect runs) at the lowest versions pyproject allows
# (uv's --resolution lowest-direct; what they pull in resolves as usual), on the lowest Python the
# tests run on, in a venv made fresh each time. It runs the pure tests, then a real collect with
# repeated -f/-m flags (tests/cli/test_collect_repeated_flags.py: typer hands those over as tuples).
# uv comes from PyPI into a venv of its own (.venv-uv). A lower bound that fails here is raised in
# pyproject, never skipped.
PY_LOWEST_VERSION := 3.11
PY_LOWEST ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/$(PY_LOWEST_VERSION).*/bin/python$(PY_LOWEST_VERSION)) $(shell command -v python$(PY_LOWEST_VERSION) 2>/dev/null))
LOWEST_VENV := .venv-lowest
UV_VENV := .venv-uv
test-lowest:
	@test -n "$(PY_LOWEST)" && "$(PY_LOWEST)" -c 'import sys; assert "%d.%d" % sys.version_info[:2] == "$(PY_LOWEST_VERSION)"' || { \
	  echo "test-lowest: no Python $(PY_LOWEST_VERSION) found (looked on PATH and under ~/.pyenv/versions); give one with PY_LOWEST=/path/to/python$(PY_LOWEST_VERSION)"; exit 1; }
	test -x $(UV_VENV)/bin/uv || { "$(PY_LOWEST)" -m venv $(UV_VENV) && $(UV_VENV)/bin/python -m pip install -q uv; }
	rm -rf $(LOWEST_VENV)
	$(UV_VENV)/bin/uv venv -q --python "$(PY_LOWEST)" $(LOWEST_VENV)
	$(UV_VENV)/bin/uv pip install -q --python $(LOWEST_VENV)/bin/python --resolution lowest-direct -e '.[test-pure,onnx,openvino]'
	@$(UV_VENV)/bin/uv pip list --python $(LOWEST_VENV)/bin/python | grep -iE '^(typer|click|duckdb|pyarrow|psutil|polars|scipy|statsmodels|numpy|onnxruntime|openvino) '
	$(LOWEST_VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "$(PURE_LANE)" -p no:cacheprovider
	$(LOWEST_VENV)/bin/python -m pytest -n 0 -p no:cacheprovider tests/cli/test_collect_repeated_flags.py

# arm64, emulated: a Debian bookworm arm64 userland (Raspberry Pi OS's base) built by debootstrap
# and run under qemu-user, where the wheel with [onnx,tflite] installs from the package index and
# doctor, collect (from a pack built here) and import run; the DB is merged and analysed here
# (.ci/arm64.sh says what is checked). Needs root. The userland and its venv are cached in
# ~/.cache/edgestats/arm64 (ARM64_CACHE). Emulated timings mean nothing: nothing reads them.
test-arm64: install
	bash .ci/arm64.sh

demo: install-demo
	rm -f $(DB) $(DB).wal published.duckdb published.duckdb.wal merged.duckdb merged.duckdb.wal
	$(BIN)/edgestats doctor
	$(BIN)/edgestats collect sample_data/demo_sweep.toml --db $(DB)
	$(BIN)/edgestats collect sample_data/demo_sweep_new_runtimes.toml --db $(DB)
	$(BIN)/edgestats collect sample_data/demo_sweep_torch_compile.toml --db $(DB)
	$(BIN)/edgestats collect sample_data/demo_sweep_generation.toml --db $(DB)
	$(BIN)/edgestats sql $(DB) "SELECT framework, runtime, model, count(*) AS runs, sum(n_latencies) AS latencies, round(median(latency_median_ms), 3) AS median_ms, round(min(latency_median_ms), 3) AS fastest_run_ms, round(max(latency_median_ms), 3) AS slowest_run_ms FROM run_summary GROUP BY ALL ORDER BY model, median_ms"
	$(BIN)/edgestats sql $(DB) "PIVOT (SELECT r.framework || ' ' || r.model AS run, p.phase, round((p.end_ns - p.start_ns) / 1e9, 3) AS s FROM phases p JOIN runs r USING (run_id) WHERE r.repeat_index = 0 AND p.phase IN ('import', 'load_model', 'first_inference', 'second_inference', 'steady', 'total')) ON phase IN ('import', 'load_model', 'first_inference', 'second_inference', 'steady', 'total') USING first(s) ORDER BY run"
	$(BIN)/edgestats sql $(DB) "SELECT framework, prompt_tokens, count(*) AS runs, round(median(ttft_ms), 2) AS ttft_ms, round(median(decode_tokens_per_s), 1) AS decode_tokens_per_s, round(median(itl_p90_ms), 2) AS itl_p90_ms FROM generation_summary GROUP BY ALL ORDER BY framework, prompt_tokens"
	$(BIN)/edgestats import published.duckdb sample_data/pcamp_inference.csv --kind inference
	$(BIN)/edgestats import published.duckdb sample_data/dlaas_tf_mnist_cpu.csv --kind training
	$(BIN)/edgestats merge merged.duckdb $(DB) published.duckdb
	$(BIN)/edgestats sql merged.duckdb "SELECT device, framework, model, round(latency_median_ms, 3) AS median_ms, source FROM run_summary WHERE kind = 'inference' AND model IN ('squeezenet', 'alexnet') ORDER BY median_ms"
	$(BIN)/edgestats sql merged.duckdb "SELECT batch_size, iterations, training_time_s, accuracy_pct FROM training_summary ORDER BY batch_size, iterations" --format markdown
	$(BIN)/edgestats export merged.duckdb --parquet results-parquet --overwrite
	$(BIN)/edgestats analyze merged.duckdb --out report
	@echo "collected: $(DB); with the published tables: merged.duckdb (query: $(BIN)/edgestats sql merged.duckdb 'SELECT * FROM run_summary'); Parquet: results-parquet/"
	@echo "report: open report/index.html in a browser (works offline)"

bench: install
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/analyze.py
	$(BIN)/python bench/report.py
	$(BIN)/python bench/fidelity.py --threads 1 --pairs 5
	$(BIN)/python bench/generation_fidelity.py
	$(BIN)/python bench/overhead.py --rounds 10
	$(BIN)/python bench/training.py --threads 1 --pairs 10

clean:
	rm -rf $(VENV) build dist *.egg-info results-parquet report test-artifacts $(DB) $(DB).wal published.duckdb merged.duckdb
