-- 0003_epoch_energy: gross energy of each training epoch's training and testing windows, cut at
-- ingest from the run's device-total energy series like phases and inferences (0002); the idle
-- baseline is subtracted in the `epoch_energy` view. NULL without a power source.

ALTER TABLE epochs ADD COLUMN train_energy_gross_j DOUBLE;
ALTER TABLE epochs ADD COLUMN test_energy_gross_j DOUBLE;
