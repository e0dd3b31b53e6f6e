-- 0009_generation: generation workloads (collect --kind generation; docs/generation.md).
--
-- runs.kind gains 'generation'. DuckDB cannot alter a CHECK constraint, so the runs table is
-- re-created with every column it had (same names, types, order and constraints), the rows
-- copied, and the new columns appended:
--   prompt_tokens   the measured prompt's tokens per sequence (batch_size = concurrent sequences)
--   new_tokens      tokens generated per sequence, exactly (greedy, no early stop)
--   context_depth   tokens already in the KV cache before the measured prompt (llama-bench -d)
--   kv_cache_bytes  the KV cache as allocated: K and V of every layer for context + prompt + new
--                   tokens of every sequence
-- A generation run stores every generated token's latency in latencies (iteration = the token's
-- index; token 0, marked warmup, holds the time to first token; the others the inter-token
-- latencies) and its phases in phases (prefill, first_token, decode, ...). The per-run figures
-- are the generation_summary view's (views.sql).
--
-- run_results gains what a benchmark tool reports per generation run (llama-bench's prompt
-- processing and token generation rates), for imported runs that have no per-token rows.

CREATE TABLE runs_0009 (
    run_id             UUID PRIMARY KEY,
    sweep_id           UUID,
    device_id          UUID NOT NULL,
    kind               VARCHAR NOT NULL CHECK (kind IN ('inference', 'training', 'generation')),
    status             VARCHAR NOT NULL
                       CHECK (status IN ('ok', 'error', 'timeout', 'killed', 'diverged')),
    error_text         VARCHAR,
    framework          VARCHAR,
    framework_version  VARCHAR,
    runtime            VARCHAR,
    model              VARCHAR,
    model_params       BIGINT,
    model_flops        BIGINT,
    dataset            VARCHAR,
    batch_size         INTEGER,
    threads            INTEGER,
    precision          VARCHAR,
    accelerator        VARCHAR,
    iterations         INTEGER,
    warmup             INTEGER,
    epochs             INTEGER,
    learning_rate      DOUBLE,
    optimizer          VARCHAR,
    num_workers        INTEGER,
    storage            VARCHAR,
    seed               BIGINT,
    repeat_index       INTEGER,
    hyperparameters    JSON,
    config             JSON,
    config_hash        VARCHAR,
    environment        JSON,
    extra              JSON,
    started_at         TIMESTAMPTZ,
    ended_at           TIMESTAMPTZ,
    edgestats_version  VARCHAR NOT NULL,
    source             VARCHAR NOT NULL,
    power_source       VARCHAR,
    sample_hz          DOUBLE,
    energy_unavailable_reason VARCHAR,
    power_rails        VARCHAR[],
    noisy              BOOLEAN,
    noise_reason       VARCHAR,
    epochs_run         DOUBLE,
    dataset_path       VARCHAR,
    dataset_samples    INTEGER,
    dataset_test_samples INTEGER,
    dataset_bytes      BIGINT,
    dataset_image_h    INTEGER,
    dataset_image_w    INTEGER,
    dataset_image_c    INTEGER,
    steady_from        INTEGER,
    no_steady_state    BOOLEAN,
    prompt_tokens      INTEGER,
    new_tokens         INTEGER,
    context_depth      INTEGER,
    kv_cache_bytes     BIGINT
);

INSERT INTO runs_0009 SELECT *, NULL, NULL, NULL, NULL FROM runs;
DROP TABLE runs;
ALTER TABLE runs_0009 RENAME TO runs;

ALTER TABLE run_results ADD COLUMN ttft_ms DOUBLE;               -- time to first token
ALTER TABLE run_results ADD COLUMN prefill_tokens_per_s DOUBLE;  -- prompt processing (llama-bench pp)
ALTER TABLE run_results ADD COLUMN decode_tokens_per_s DOUBLE;   -- token generation (llama-bench tg)
