-- 0007_latency_percentiles: the percentiles a benchmark tool prints (docs/cli/import.md,
-- "Native formats"), as run_results columns.
--
-- An imported run had one latency figure (latency_ms: the tool's mean, or a table's median);
-- TFLite's benchmark_model, OpenVINO's benchmark_app, ONNX Runtime's perf_test and MLPerf's
-- loadgen also print a median and tail percentiles, which were kept in runs.extra, so
-- run_summary's latency_p90_ms and latency_p99_ms stayed NULL for those runs. run_results now
-- holds the run's median, p90 and p99 as the tool printed them; run_summary shows them where a
-- run has no per-inference rows. Runs imported before this migration have them in runs.extra:
-- they are copied here and removed from extra (the same figure in two places would be two
-- columns of run_extra that could disagree after an edit).

ALTER TABLE run_results ADD COLUMN latency_p50_ms DOUBLE;
ALTER TABLE run_results ADD COLUMN latency_p90_ms DOUBLE;
ALTER TABLE run_results ADD COLUMN latency_p99_ms DOUBLE;

UPDATE run_results SET
    latency_p50_ms = TRY_CAST(r.extra ->> '$.latency_p50_ms' AS DOUBLE),
    latency_p90_ms = TRY_CAST(r.extra ->> '$.latency_p90_ms' AS DOUBLE),
    latency_p99_ms = TRY_CAST(r.extra ->> '$.latency_p99_ms' AS DOUBLE)
FROM runs r
WHERE r.run_id = run_results.run_id AND r.extra IS NOT NULL;

UPDATE runs SET extra = CASE
        WHEN json_merge_patch(extra, '{"latency_p50_ms": null, "latency_p90_ms": null, "latency_p99_ms": null}') = '{}'
        THEN NULL
        ELSE json_merge_patch(extra, '{"latency_p50_ms": null, "latency_p90_ms": null, "latency_p99_ms": null}') END
WHERE extra IS NOT NULL
  AND (json_exists(extra, '$.latency_p50_ms') OR json_exists(extra, '$.latency_p90_ms')
       OR json_exists(extra, '$.latency_p99_ms'));
