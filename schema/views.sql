-- Views: one name for each common question. Re-applied (CREATE OR REPLACE VIEW) every time a DB
-- is opened for writing, so they may change between releases without a migration; they must
-- only read columns that the migrations guarantee.
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

CREATE OR REPLACE VIEW run_memory_stats AS
SELECT
    run_id,
    max(value)  AS rss_peak_bytes,
    avg(value)  AS rss_mean_bytes
FROM samples
WHERE metric = 'rss_bytes'
GROUP BY run_id;

CREATE OR REPLACE VIEW run_summary AS
SELECT
    r.run_id, r.sweep_id, r.device_id, d.name AS device, r.kind, r.status, r.error_text,
    r.framework, r.framework_version, r.runtime, r.model, r.model_params, r.model_flops,
    r.dataset, r.batch_size, r.threads, r.precision, r.accelerator, r.iterations, r.warmup,
    r.epochs, r.learning_rate, r.optimizer, r.num_workers, r.storage, r.repeat_index,
    r.started_at, r.ended_at, r.source, r.power_source,
    coalesce(l.n_latencies, 0)                              AS n_latencies,
    coalesce(l.latency_median_ms, res.latency_ms)           AS latency_median_ms,
    l.latency_p90_ms,
    l.latency_p99_ms,
    coalesce(l.latency_mean_ms, res.latency_ms)             AS latency_mean_ms,
    coalesce(m.rss_peak_bytes, res.mem_max_mb * 1048576.0)  AS rss_peak_bytes,
    coalesce(m.rss_mean_bytes, res.mem_avg_mb * 1048576.0)  AS rss_mean_bytes,
    res.energy_j,
    CASE WHEN res.energy_j IS NOT NULL AND r.iterations > 0
         THEN res.energy_j / r.iterations END               AS energy_per_inference_j
FROM runs r
LEFT JOIN devices d USING (device_id)
LEFT JOIN run_latency_stats l USING (run_id)
LEFT JOIN run_memory_stats m USING (run_id)
LEFT JOIN run_results res USING (run_id);

-- Energy per phase window. Energy attribution (baseline-subtracted integration of the power
-- samples) arrives with the telemetry work; until then energy_j is NULL and the reason says why.
-- NULL means "not measured", never 0.
CREATE OR REPLACE VIEW phase_energy AS
SELECT
    p.run_id, p.seq, p.phase, p.start_ns, p.end_ns,
    (p.end_ns - p.start_ns) / 1e9   AS duration_s,
    CAST(NULL AS DOUBLE)            AS energy_j,
    r.power_source                  AS source,
    CASE WHEN r.power_source IS NULL THEN 'no power source was recorded for this run'
         ELSE 'no energy samples were stored for this phase' END AS energy_unavailable_reason
FROM phases p
JOIN runs r USING (run_id);

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

CREATE OR REPLACE VIEW training_summary AS
SELECT
    r.run_id, r.sweep_id, r.device_id, d.name AS device, r.status, r.error_text,
    r.framework, r.framework_version, r.runtime, r.model, r.model_params, r.dataset,
    r.batch_size, r.threads, r.iterations, r.epochs, r.learning_rate, r.optimizer,
    r.num_workers, r.storage, r.precision, r.accelerator, r.seed, r.source,
    e.n_epochs,
    coalesce(e.training_time_s, res.training_time_s)    AS training_time_s,
    coalesce(e.testing_time_s, res.testing_time_s)      AS testing_time_s,
    coalesce(e.final_accuracy_pct, res.accuracy_pct)    AS accuracy_pct,
    e.final_train_loss,
    res.mem_avg_mb, res.mem_max_mb,
    res.cpu_user_pct, res.cpu_system_pct, res.cpu_iowait_pct, res.cpu_total_pct
FROM runs r
LEFT JOIN devices d USING (device_id)
LEFT JOIN epoch_times e USING (run_id)
LEFT JOIN run_results res USING (run_id)
WHERE r.kind = 'training';
