-- 0005_imported_epochs: epochs as published tables give them.
--
-- runs.epochs (INTEGER) stays the epochs a run was set to do. Published training tables also
-- give the epochs actually run, often derived as iterations x batch size / dataset size and so
-- fractional (DLaaS Table XIV: 10.67), or fewer than set where a framework stopped early: that
-- figure is kept as given in epochs_run, beside epochs when a table gives both.
-- run_results.epoch_time_s is a per-epoch time a table reports directly; where a table gives
-- only the total, training_summary derives it (training_time_s / epochs run), nothing derived
-- is stored.

ALTER TABLE runs ADD COLUMN epochs_run DOUBLE;
ALTER TABLE run_results ADD COLUMN epoch_time_s DOUBLE;
