-- 0004_noise: the noise sentinel's verdict on each collected run (docs/cli/collect.md, "Noise
-- sentinel"). The figures it was judged on (load average, CPU used outside the run's process
-- tree, swap activity, throttling, frequencies, temperature, before and during the run) and the
-- thresholds are kept in runs.environment.noise.
--
-- noisy is NULL where the run was not judged: imported runs, runs stored before this migration,
-- and runs recovered after their `edgestats collect` died (nothing watched the machine then).
-- It is never false for "unknown".

ALTER TABLE runs ADD COLUMN noisy BOOLEAN;
ALTER TABLE runs ADD COLUMN noise_reason VARCHAR;     -- the reasons, '; '-separated; NULL when quiet
