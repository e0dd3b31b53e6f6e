-- 0001_initial: the results store.
--
-- Released migrations are never edited: change the schema with a new NNNN_name.sql file.
-- Units are in every measured column's name (_ns, _ms, _s, _bytes, _mb, _w, _j, _pct, _c).
-- Ids are UUIDs so that files from many devices merge without collisions.
-- Child tables (phases, latencies, samples, epochs, batches) carry no index or foreign key:
-- they are written in bulk, one run per transaction, by the store, which is their only writer;
-- an index on them would cost more at ingest than it saves at query time.

CREATE TABLE devices (
    device_id        UUID PRIMARY KEY,
    name             VARCHAR NOT NULL,      -- hostname, or the name given on import
    hostname         VARCHAR,
    arch             VARCHAR,               -- platform.machine(): x86_64, aarch64, armv7l
    cpu_model        VARCHAR,
    cores            INTEGER,               -- logical CPUs
    mem_total_bytes  BIGINT,
    gpu              VARCHAR,
    os               VARCHAR,
    kernel           VARCHAR,
    power_mode       VARCHAR,               -- e.g. Jetson nvpmodel mode, CPU governor
    facts            JSON,                  -- everything else the device reported
    registered_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE runs (
    run_id             UUID PRIMARY KEY,
    sweep_id           UUID,
    device_id          UUID NOT NULL,
    kind               VARCHAR NOT NULL CHECK (kind IN ('inference', 'training')),
    status             VARCHAR NOT NULL
                       CHECK (status IN ('ok', 'error', 'timeout', 'killed', 'diverged')),
    error_text         VARCHAR,
    -- configuration axes that analyses group and filter by
    framework          VARCHAR,
    framework_version  VARCHAR,
    runtime            VARCHAR,             -- torch-eager, torchscript, tf-function, tflite, onnxruntime, ...
    model              VARCHAR,
    model_params       BIGINT,              -- trainable parameters
    model_flops        BIGINT,              -- FLOPs per inference of one sample, where computable
    dataset            VARCHAR,
    batch_size         INTEGER,
    threads            INTEGER,
    precision          VARCHAR,             -- fp32, fp16, int8
    accelerator        VARCHAR,             -- cpu, cuda
    iterations         INTEGER,
    warmup             INTEGER,
    epochs             INTEGER,
    learning_rate      DOUBLE,
    optimizer          VARCHAR,
    num_workers        INTEGER,
    storage            VARCHAR,
    seed               BIGINT,
    repeat_index       INTEGER,             -- k of --repeat K
    hyperparameters    JSON,
    config             JSON,                -- the full configuration the run was planned from
    config_hash        VARCHAR,             -- what a resumed sweep matches on
    environment        JSON,                -- library versions, BLAS, thread env vars, governor
    extra              JSON,                -- imported columns edgestats has no name for
    started_at         TIMESTAMPTZ,
    ended_at           TIMESTAMPTZ,
    edgestats_version  VARCHAR NOT NULL,
    source             VARCHAR NOT NULL,    -- 'collect' or 'import:<file name>'
    power_source       VARCHAR,             -- rapl, nvml, jetson, csv:<file>; NULL = none
    sample_hz          DOUBLE
);

-- Figures reported per run rather than derived from raw rows: imported results (one row per run,
-- DESIGN.md §8) and a collector's own per-run totals. Views prefer raw rows where they exist.
CREATE TABLE run_results (
    run_id           UUID PRIMARY KEY,
    training_time_s  DOUBLE,
    testing_time_s   DOUBLE,
    accuracy_pct     DOUBLE,
    latency_ms       DOUBLE,
    load_time_s      DOUBLE,
    total_time_s     DOUBLE,
    mem_avg_mb       DOUBLE,
    mem_max_mb       DOUBLE,
    cpu_user_pct     DOUBLE,
    cpu_system_pct   DOUBLE,
    cpu_iowait_pct   DOUBLE,
    cpu_total_pct    DOUBLE,
    energy_j         DOUBLE,
    power_w          DOUBLE,
    fetch_stall_s    DOUBLE,
    compute_s        DOUBLE,
    e2e_s            DOUBLE
);

-- Phase windows on the worker's time.monotonic_ns() clock (system-wide CLOCK_MONOTONIC on
-- Linux, shared with the sampler), so power can be integrated over each window.
CREATE TABLE phases (
    run_id    UUID NOT NULL,
    seq       INTEGER NOT NULL,             -- order within the run
    phase     VARCHAR NOT NULL,             -- import, load_model, load_first_input, first_inference, ...
    start_ns  BIGINT NOT NULL,
    end_ns    BIGINT
);

-- Every inference's latency (perf_counter_ns around it), never only a mean.
CREATE TABLE latencies (
    run_id      UUID NOT NULL,
    iteration   INTEGER NOT NULL,
    warmup      BOOLEAN NOT NULL,
    start_ns    BIGINT,                     -- monotonic start, for per-inference energy
    latency_ns  BIGINT NOT NULL
);

-- Telemetry in long format. metric is VARCHAR: DuckDB's storage dictionary-compresses
-- low-cardinality strings, and open-ended names (one per power rail or thermal zone,
-- e.g. 'energy_j:package-0', 'temp_c:cpu-thermal') need no dictionary table to merge.
CREATE TABLE samples (
    run_id  UUID NOT NULL,
    t_ns    BIGINT NOT NULL,                -- time.monotonic_ns()
    metric  VARCHAR NOT NULL,
    value   DOUBLE
);

CREATE TABLE baselines (
    baseline_id   UUID PRIMARY KEY,
    device_id     UUID NOT NULL,
    measured_at   TIMESTAMPTZ NOT NULL,
    seconds       DOUBLE NOT NULL,
    source        VARCHAR NOT NULL,
    mean_power_w  DOUBLE,
    std_power_w   DOUBLE,
    n             BIGINT NOT NULL
);

CREATE TABLE epochs (
    run_id                 UUID NOT NULL,
    epoch                  INTEGER NOT NULL,
    train_start_ns         BIGINT,
    train_end_ns           BIGINT,
    test_start_ns          BIGINT,
    test_end_ns            BIGINT,
    train_loss             DOUBLE,
    test_loss              DOUBLE,
    train_accuracy_pct     DOUBLE,
    test_accuracy_pct      DOUBLE,
    n_batches              INTEGER,
    cache_resident_pct     DOUBLE,          -- page-cache residency of the dataset before the epoch
    cache_evicted          BOOLEAN
);

CREATE TABLE batches (
    run_id      UUID NOT NULL,
    epoch       INTEGER NOT NULL,
    batch       INTEGER NOT NULL,
    start_ns    BIGINT,
    fetch_ns    BIGINT,                     -- fetch + preprocess of this batch
    stall_ns    BIGINT,                     -- time the compute step waited for it
    compute_ns  BIGINT,                     -- synchronised on GPU
    e2e_ns      BIGINT,
    n_samples   INTEGER,
    loss        DOUBLE
);
