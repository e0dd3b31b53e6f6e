-- Views: one name for each common question. Re-applied (CREATE OR REPLACE) every time a DB is
-- opened for writing, so they may change between releases without a migration; they must only
-- read columns that the migrations guarantee. Dependencies come first.
--
-- Raw rows win over reported figures: a collected run's latency comes from `latencies`; an
-- imported run (one row per run) has only `run_results`, which fills the same columns.

CREATE OR REPLACE VIEW run_latency_stats AS
SELECT
    run_id,
    count(*)                                    AS n_latencies,
    quantile_cont(latency_ns, 0.5) / 1e6        AS latency_median_ms,
    quantile_cont(latency_ns, 0.9) / 1e6        AS latency_p90_ms,
    quantile_cont(latency_ns, 0.99) / 1e6       AS latency_p99_ms,
    avg(latency_ns) / 1e6                       AS latency_mean_ms
FROM latencies
WHERE NOT warmup
GROUP BY run_id;

-- Peak and mean of the sampler's telemetry per run. CPU figures are averaged over the run: one
-- tick's CPU share at 100 Hz is quantised to the kernel's 10 ms accounting (see the sampler).
-- io_read_* are counters since the worker's birth, so their maximum is the run's total.
CREATE OR REPLACE VIEW run_telemetry_stats AS
SELECT
    run_id,
    count(*)                                                           AS n_samples,
    max(value) FILTER (WHERE metric = 'rss_bytes')                     AS rss_peak_bytes,
    avg(value) FILTER (WHERE metric = 'rss_bytes')                     AS rss_mean_bytes,
    max(value) FILTER (WHERE metric = 'uss_bytes')                     AS uss_peak_bytes,
    avg(value) FILTER (WHERE metric = 'uss_bytes')                     AS uss_mean_bytes,
    avg(value) FILTER (WHERE metric = 'cpu_user_pct')                  AS cpu_user_mean_pct,
    avg(value) FILTER (WHERE metric = 'cpu_system_pct')                AS cpu_system_mean_pct,
    avg(value) FILTER (WHERE metric = 'cpu_iowait_pct')                AS cpu_iowait_mean_pct,
    avg(value) FILTER (WHERE metric = 'cpu_total_pct')                 AS cpu_total_mean_pct,
    max(value) FILTER (WHERE metric = 'cpu_total_pct')                 AS cpu_total_peak_pct,
    avg(value) FILTER (WHERE metric = 'sys_cpu_total_pct')             AS sys_cpu_total_mean_pct,
    avg(value) FILTER (WHERE metric = 'sys_cpu_iowait_pct')            AS sys_cpu_iowait_mean_pct,
    max(value) FILTER (WHERE metric = 'io_read_bytes')                 AS io_read_bytes,
    max(value) FILTER (WHERE metric = 'io_read_ops')                   AS io_read_ops,
    max(value) FILTER (WHERE starts_with(metric, 'temp_c:'))           AS temp_peak_c,
    avg(value) FILTER (WHERE starts_with(metric, 'gpu_util_pct:'))     AS gpu_util_mean_pct,
    max(value) FILTER (WHERE starts_with(metric, 'gpu_util_pct:'))     AS gpu_util_peak_pct,
    max(value) FILTER (WHERE starts_with(metric, 'gpu_mem_bytes:'))    AS gpu_mem_peak_bytes
FROM samples
GROUP BY run_id;

-- Kept for queries written against the first release.
CREATE OR REPLACE VIEW run_memory_stats AS
SELECT run_id, rss_peak_bytes, rss_mean_bytes FROM run_telemetry_stats WHERE rss_peak_bytes IS NOT NULL;

-- Student's t quantile for a two-sided 95 % interval: exact to 3 decimals for df <= 30, then
-- the Cornish-Fisher expansion z + (z^3 + z) / (4 df) + (5z^5 + 16z^3 + 3z) / (96 df^2)
-- (within 0.001 of the true value).
CREATE OR REPLACE MACRO t975(df) AS CASE
    WHEN df IS NULL OR df < 1 THEN NULL
    WHEN df <= 30 THEN [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042][CAST(df AS INTEGER)]
    ELSE 1.959964 + 2.372 / df + 2.823 / (df * df) END;

-- The idle baseline each run is measured against: same device, same kind of power source
-- (csv:<file> matches any meter file), same rails; the one measured closest in time to the run.
CREATE OR REPLACE VIEW run_baseline_stats AS
WITH chosen AS (
    SELECT
        r.run_id,
        arg_min(b.baseline_id, abs(epoch(b.measured_at) - epoch(coalesce(r.started_at, b.measured_at)))) AS baseline_id
    FROM runs r
    JOIN baselines b
      ON b.device_id = r.device_id
     AND split_part(b.source, ':', 1) = split_part(r.power_source, ':', 1)
     AND (b.rails IS NULL OR r.power_rails IS NULL OR list_sort(b.rails) = list_sort(r.power_rails))
     AND b.mean_power_w IS NOT NULL
    GROUP BY r.run_id
)
SELECT
    c.run_id, b.baseline_id, b.mean_power_w AS idle_power_w, b.std_power_w AS idle_std_power_w, b.n AS idle_n,
    -- half-width of the 95 % t interval of the idle mean (W): what subtracting it adds to every figure
    CASE WHEN b.n >= 2 AND b.std_power_w IS NOT NULL THEN t975(b.n - 1) * b.std_power_w / sqrt(b.n) END AS idle_ci_half_w
FROM chosen c JOIN baselines b USING (baseline_id);

-- Energy per phase window (pCAMP Figure 3): the gross energy measured over the window minus the
-- idle baseline's power times its duration (Figure 1: the area between the workload's curve
-- and the baseline). The interval carries the baseline's uncertainty (95 % t interval of its
-- mean), not the run-to-run spread, which repeats measure. NULL energy comes with its reason,
-- and is never 0.
CREATE OR REPLACE VIEW phase_energy AS
SELECT
    p.run_id, p.seq, p.phase, p.start_ns, p.end_ns,
    (p.end_ns - p.start_ns) / 1e9                                                  AS duration_s,
    e.energy_gross_j,
    b.idle_power_w,
    e.energy_gross_j - b.idle_power_w * (p.end_ns - p.start_ns) / 1e9             AS energy_j,
    e.energy_gross_j - (b.idle_power_w + b.idle_ci_half_w) * (p.end_ns - p.start_ns) / 1e9 AS energy_ci_low_j,
    e.energy_gross_j - (b.idle_power_w - b.idle_ci_half_w) * (p.end_ns - p.start_ns) / 1e9 AS energy_ci_high_j,
    e.energy_gross_j / nullif((p.end_ns - p.start_ns) / 1e9, 0)                    AS mean_power_w,
    r.power_source                                                                 AS source,
    CASE
        WHEN r.power_source IS NULL
            THEN coalesce(r.energy_unavailable_reason, 'no power source was recorded for this run')
        WHEN e.energy_gross_j IS NULL
            THEN coalesce(e.unavailable_reason, r.energy_unavailable_reason, 'no energy was attributed to this phase')
        WHEN b.idle_power_w IS NULL
            THEN 'no idle baseline for this device and power source: run `edgestats baseline --db DB --power '
                 || r.power_source
                 -- a named device's baseline must carry its name (a baseline under the host name is another device)
                 || CASE WHEN d.facts->>'$.device_id_source' = 'device-name'
                         THEN ' --device-name ''' || d.name || '''' ELSE '' END
                 || '` on the device'
    END                                                                            AS energy_unavailable_reason
FROM phases p
JOIN runs r USING (run_id)
LEFT JOIN devices d USING (device_id)
LEFT JOIN phase_energies e USING (run_id, seq)
LEFT JOIN run_baseline_stats b USING (run_id);

-- Energy of each inference: gross over its latency window, minus idle power x latency.
CREATE OR REPLACE VIEW inference_energy AS
SELECT
    l.run_id, l.iteration, l.warmup, l.start_ns, l.latency_ns,
    l.energy_gross_j,
    l.energy_gross_j - b.idle_power_w * l.latency_ns / 1e9        AS energy_j,
    b.idle_ci_half_w * l.latency_ns / 1e9                         AS energy_ci_half_j
FROM latencies l
LEFT JOIN run_baseline_stats b USING (run_id);

-- Per run: energy per steady inference (mean over inferences, with the baseline's interval).
CREATE OR REPLACE VIEW run_energy_stats AS
SELECT
    run_id,
    avg(energy_j)                                AS energy_per_inference_j,
    avg(energy_j) - avg(energy_ci_half_j)        AS energy_per_inference_ci_low_j,
    avg(energy_j) + avg(energy_ci_half_j)        AS energy_per_inference_ci_high_j,
    sum(energy_j)                                AS steady_energy_j
FROM inference_energy
WHERE NOT warmup AND energy_gross_j IS NOT NULL
GROUP BY run_id;

-- Energy of each training epoch (training and testing windows), baseline subtracted as above.
CREATE OR REPLACE VIEW epoch_energy AS
SELECT
    e.run_id, e.epoch,
    (e.train_end_ns - e.train_start_ns) / 1e9                                        AS train_s,
    e.train_energy_gross_j - b.idle_power_w * (e.train_end_ns - e.train_start_ns) / 1e9 AS train_energy_j,
    b.idle_ci_half_w * (e.train_end_ns - e.train_start_ns) / 1e9                    AS train_energy_ci_half_j,
    (e.test_end_ns - e.test_start_ns) / 1e9                                          AS test_s,
    e.test_energy_gross_j - b.idle_power_w * (e.test_end_ns - e.test_start_ns) / 1e9 AS test_energy_j,
    e.train_energy_gross_j, e.test_energy_gross_j, b.idle_power_w
FROM epochs e
LEFT JOIN run_baseline_stats b USING (run_id);

-- Imported columns edgestats has no name for (runs.extra), one row per run and column: the value
-- as written and, where it reads as a number (thousands separators as in published tables
-- accepted), as DOUBLE. `edgestats import` also (re)creates the view run_extra from this one:
-- one row per run, one typed column per key (docs/cli/import.md, "Extra columns").
CREATE OR REPLACE VIEW run_extra_values AS
SELECT
    r.run_id,
    e.key                                                                       AS key,
    e.value ->> '$'                                                             AS value,
    TRY_CAST(CASE WHEN regexp_full_match(trim(e.value ->> '$'), '^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$')
                  THEN replace(trim(e.value ->> '$'), ',', '') ELSE trim(e.value ->> '$') END AS DOUBLE) AS value_num
FROM runs r, json_each(r.extra) e
WHERE r.extra IS NOT NULL;

CREATE OR REPLACE VIEW run_summary AS
SELECT
    r.run_id, r.sweep_id, r.device_id, d.name AS device, r.kind, r.status, r.error_text,
    r.framework, r.framework_version, r.runtime, r.model, r.model_params, r.model_flops,
    r.dataset, r.batch_size, r.threads, r.precision, r.accelerator, r.iterations, r.warmup,
    r.epochs, r.learning_rate, r.optimizer, r.num_workers, r.storage, r.repeat_index,
    r.started_at, r.ended_at, r.source, r.power_source, r.sample_hz, r.noisy, r.noise_reason,
    -- the change-point analysis of the run's latencies (0008); NULL: not judged
    r.steady_from, r.no_steady_state,
    coalesce(l.n_latencies, 0)                                   AS n_latencies,
    coalesce(t.n_samples, 0)                                     AS n_samples,
    -- an imported run: the median its tool printed (0007), else its one latency figure
    coalesce(l.latency_median_ms, res.latency_p50_ms, res.latency_ms) AS latency_median_ms,
    coalesce(l.latency_p90_ms, res.latency_p90_ms)               AS latency_p90_ms,
    coalesce(l.latency_p99_ms, res.latency_p99_ms)               AS latency_p99_ms,
    coalesce(l.latency_mean_ms, res.latency_ms)                  AS latency_mean_ms,
    coalesce(t.rss_peak_bytes, res.mem_max_mb * 1048576.0)       AS rss_peak_bytes,
    coalesce(t.rss_mean_bytes, res.mem_avg_mb * 1048576.0)       AS rss_mean_bytes,
    t.uss_peak_bytes, t.uss_mean_bytes,
    coalesce(t.cpu_user_mean_pct, res.cpu_user_pct)              AS cpu_user_mean_pct,
    coalesce(t.cpu_system_mean_pct, res.cpu_system_pct)          AS cpu_system_mean_pct,
    coalesce(t.cpu_iowait_mean_pct, res.cpu_iowait_pct)          AS cpu_iowait_mean_pct,
    coalesce(t.cpu_total_mean_pct, res.cpu_total_pct)            AS cpu_total_mean_pct,
    t.cpu_total_peak_pct, t.sys_cpu_total_mean_pct, t.io_read_bytes, t.io_read_ops, t.temp_peak_c,
    t.gpu_util_mean_pct, t.gpu_util_peak_pct, t.gpu_mem_peak_bytes,
    coalesce(pw.total_energy_j, res.energy_j)                    AS energy_j,
    coalesce(pw.mean_power_w, res.power_w)                       AS mean_power_w,
    coalesce(en.energy_per_inference_j,
             CASE WHEN res.energy_j IS NOT NULL AND r.iterations > 0
                  THEN res.energy_j / r.iterations END)          AS energy_per_inference_j,
    en.energy_per_inference_ci_low_j,
    en.energy_per_inference_ci_high_j,
    CASE WHEN en.energy_per_inference_j IS NULL AND res.energy_j IS NULL
         THEN coalesce(pw.energy_unavailable_reason, r.energy_unavailable_reason,
                       'no power source was recorded for this run') END AS energy_unavailable_reason,
    r.epochs_run,
    -- the dataset's path and size (0006), usable as factors (--factor dataset_samples)
    r.dataset_path, r.dataset_samples, r.dataset_test_samples, r.dataset_bytes,
    r.dataset_image_h, r.dataset_image_w, r.dataset_image_c,
    -- generation runs (0009; their figures: generation_summary)
    r.prompt_tokens, r.new_tokens, r.context_depth, r.kv_cache_bytes,
    -- a run's place in a fleet (0010): identical units share a class; each has its own id
    r.device_class, r.unit_id, r.tags
FROM runs r
LEFT JOIN devices d USING (device_id)
LEFT JOIN run_latency_stats l USING (run_id)
LEFT JOIN run_telemetry_stats t USING (run_id)
LEFT JOIN run_energy_stats en USING (run_id)
LEFT JOIN (SELECT run_id, energy_j AS total_energy_j, mean_power_w, energy_unavailable_reason
           FROM phase_energy WHERE phase = 'total') pw USING (run_id)
LEFT JOIN run_results res USING (run_id);

-- Generation runs (docs/generation.md): token 0's latency is the time to first token (it is
-- stored with warmup = TRUE, so run_summary's latency columns are the inter-token latencies);
-- tokens 1.. are the decode steps, whose latencies are the inter-token latencies.
CREATE OR REPLACE VIEW generation_token_stats AS
SELECT
    l.run_id,
    count(*)                                                            AS n_tokens,
    max(l.latency_ns) FILTER (WHERE l.iteration = 0) / 1e6              AS ttft_ms,
    count(*) FILTER (WHERE l.iteration >= 1)                            AS n_decode_steps,
    sum(l.latency_ns) FILTER (WHERE l.iteration >= 1) / 1e9             AS decode_s,
    quantile_cont(l.latency_ns, 0.5) FILTER (WHERE l.iteration >= 1) / 1e6  AS itl_p50_ms,
    quantile_cont(l.latency_ns, 0.9) FILTER (WHERE l.iteration >= 1) / 1e6  AS itl_p90_ms,
    quantile_cont(l.latency_ns, 0.99) FILTER (WHERE l.iteration >= 1) / 1e6 AS itl_p99_ms,
    avg(l.latency_ns) FILTER (WHERE l.iteration >= 1) / 1e6             AS itl_mean_ms
FROM latencies l
JOIN runs r USING (run_id)
WHERE r.kind = 'generation'
GROUP BY l.run_id;

-- The prefill and decode phases of each generation run: duration and energy net of the idle
-- baseline (phase_energy), with the reason where there is none.
CREATE OR REPLACE VIEW generation_phase_stats AS
SELECT
    run_id,
    max(duration_s) FILTER (WHERE phase = 'prefill')                    AS prefill_s,
    max(energy_j) FILTER (WHERE phase = 'prefill')                      AS prefill_energy_j,
    max(energy_j) FILTER (WHERE phase = 'decode')                       AS decode_energy_j,
    max(duration_s) FILTER (WHERE phase = 'decode')                     AS decode_window_s,
    max(energy_unavailable_reason) FILTER (WHERE phase IN ('prefill', 'decode')) AS energy_unavailable_reason
FROM phase_energy
WHERE phase IN ('prefill', 'decode')
GROUP BY run_id;

-- One row per generation run: time to first token, prefill and decode rates (tokens of all
-- batch_size sequences per second), inter-token latency percentiles, memory, and energy per
-- token of each phase. Collected runs from their raw rows; imported ones (run_results) where
-- they have none.
CREATE OR REPLACE VIEW generation_summary AS
SELECT
    r.run_id, r.sweep_id, r.device_id, d.name AS device, r.status, r.error_text,
    r.framework, r.framework_version, r.runtime, r.model, r.model_params,
    r.batch_size, r.threads, r.precision, r.accelerator,
    r.prompt_tokens, r.new_tokens, r.context_depth, r.warmup, r.seed, r.repeat_index,
    r.started_at, r.source, r.power_source, r.noisy, r.noise_reason,
    coalesce(g.n_tokens, 0)                                             AS n_tokens,
    coalesce(g.ttft_ms, res.ttft_ms)                                    AS ttft_ms,
    p.prefill_s,
    coalesce(r.prompt_tokens::DOUBLE * r.batch_size / nullif(p.prefill_s, 0),
             res.prefill_tokens_per_s)                                  AS prefill_tokens_per_s,
    g.decode_s,
    coalesce(g.n_decode_steps::DOUBLE * r.batch_size / nullif(g.decode_s, 0),
             res.decode_tokens_per_s)                                   AS decode_tokens_per_s,
    g.itl_p50_ms, g.itl_p90_ms, g.itl_p99_ms, g.itl_mean_ms,
    r.kv_cache_bytes,
    coalesce(t.rss_peak_bytes, res.mem_max_mb * 1048576.0)              AS rss_peak_bytes,
    p.prefill_energy_j, p.decode_energy_j,
    p.prefill_energy_j / nullif(r.prompt_tokens::DOUBLE * r.batch_size, 0) AS prefill_energy_per_token_j,
    p.decode_energy_j / nullif(g.n_decode_steps::DOUBLE * r.batch_size, 0) AS decode_energy_per_token_j,
    CASE WHEN p.prefill_energy_j IS NULL OR p.decode_energy_j IS NULL
         THEN coalesce(p.energy_unavailable_reason, r.energy_unavailable_reason,
                       'no power source was recorded for this run') END AS energy_unavailable_reason
FROM runs r
LEFT JOIN devices d USING (device_id)
LEFT JOIN generation_token_stats g USING (run_id)
LEFT JOIN generation_phase_stats p USING (run_id)
LEFT JOIN run_telemetry_stats t USING (run_id)
LEFT JOIN run_results res USING (run_id)
WHERE r.kind = 'generation';

CREATE OR REPLACE VIEW epoch_times AS
SELECT
    run_id,
    count(*)                                        AS n_epochs,
    sum(train_end_ns - train_start_ns) / 1e9        AS training_time_s,
    sum(test_end_ns - test_start_ns) / 1e9          AS testing_time_s,
    arg_max(test_accuracy_pct, epoch)               AS final_accuracy_pct,
    arg_max(train_loss, epoch)                      AS final_train_loss
FROM epochs
GROUP BY run_id;

-- The DLaaS study's columns: memory avg/max in MB and CPU user/system/iowait, from the sampler
-- for collected runs and from run_results for imported ones.
CREATE OR REPLACE VIEW training_summary AS
SELECT
    r.run_id, r.sweep_id, r.device_id, d.name AS device, r.status, r.error_text,
    r.framework, r.framework_version, r.runtime, r.model, r.model_params, r.dataset,
    r.batch_size, r.threads, r.iterations, r.epochs, r.learning_rate, r.optimizer,
    r.num_workers, r.storage, r.precision, r.accelerator, r.seed, r.source,
    e.n_epochs,
    coalesce(e.training_time_s, res.training_time_s)              AS training_time_s,
    coalesce(e.testing_time_s, res.testing_time_s)                AS testing_time_s,
    coalesce(e.final_accuracy_pct, res.accuracy_pct)              AS accuracy_pct,
    e.final_train_loss,
    coalesce(t.rss_mean_bytes / 1048576.0, res.mem_avg_mb)        AS mem_avg_mb,
    coalesce(t.rss_peak_bytes / 1048576.0, res.mem_max_mb)        AS mem_max_mb,
    coalesce(t.cpu_user_mean_pct, res.cpu_user_pct)               AS cpu_user_pct,
    coalesce(t.cpu_system_mean_pct, res.cpu_system_pct)           AS cpu_system_pct,
    coalesce(t.cpu_iowait_mean_pct, res.cpu_iowait_pct)           AS cpu_iowait_pct,
    coalesce(t.cpu_total_mean_pct, res.cpu_total_pct)             AS cpu_total_pct,
    t.io_read_bytes, t.io_read_ops,
    ee.training_energy_j, ee.testing_energy_j,
    coalesce(ee.training_energy_j, res.energy_j)                  AS energy_j,
    CASE WHEN ee.training_energy_j IS NULL AND res.energy_j IS NULL
         THEN coalesce(pw.energy_unavailable_reason, r.energy_unavailable_reason,
                       'no power source was recorded for this run') END AS energy_unavailable_reason,
    -- epochs actually run (0005), and the time of one epoch: as a table reports it, else over
    -- the collected epochs, else an imported total over the epochs run (or set)
    r.epochs_run,
    coalesce(res.epoch_time_s, e.training_time_s / nullif(e.n_epochs, 0),
             res.training_time_s / nullif(coalesce(r.epochs_run, r.epochs), 0))  AS epoch_time_s,
    r.dataset_path, r.dataset_samples, r.dataset_test_samples, r.dataset_bytes,
    r.dataset_image_h, r.dataset_image_w, r.dataset_image_c
FROM runs r
LEFT JOIN devices d USING (device_id)
LEFT JOIN epoch_times e USING (run_id)
-- a run's total only when every epoch has its energy: a partial sum would pass for the whole
LEFT JOIN (SELECT run_id,
                  CASE WHEN count(train_energy_j) = count(*) THEN sum(train_energy_j) END AS training_energy_j,
                  CASE WHEN count(test_energy_j) = count(*) THEN sum(test_energy_j) END AS testing_energy_j
           FROM epoch_energy GROUP BY run_id) ee USING (run_id)
LEFT JOIN (SELECT run_id, energy_unavailable_reason FROM phase_energy WHERE phase = 'total') pw USING (run_id)
LEFT JOIN run_telemetry_stats t USING (run_id)
LEFT JOIN run_results res USING (run_id)
WHERE r.kind = 'training';
