-- 0008_steady_state: where each collected run's steady state begins, found in its latencies
-- rather than assumed after a fixed warm-up count (docs/methodology.md §1, "Steady state";
-- docs/cli/collect.md, "Warm-up and steady state"; collectors/steady_state.py).
--
-- steady_from is the iteration (latencies.iteration, warm-up included: 0 is the first warm-up
-- inference) at which the change-point analysis finds the run steady; NULL when it found none.
-- no_steady_state is true when the run's latencies still drift at its end: no final segment of
-- at least a quarter of the run is free of a trend. Both are NULL where the run was not judged:
-- imported runs, runs stored before this migration, and runs with fewer than 50 latencies
-- (training runs among them).

ALTER TABLE runs ADD COLUMN steady_from INTEGER;
ALTER TABLE runs ADD COLUMN no_steady_state BOOLEAN;
