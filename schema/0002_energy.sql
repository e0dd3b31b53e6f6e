-- 0002_energy: energy attribution and the sampler's notes.
--
-- Gross energy (what the power source measured, idle included) is computed once, at ingest,
-- per phase window and per inference, because it needs the run's raw power/energy series and
-- the integration code. The idle baseline is subtracted in the views (views.sql) rather than
-- stored, so a baseline measured after the runs still applies to them, and re-measuring it
-- changes every figure consistently.

-- One row per (run, phase) for runs that had a power source. energy_gross_j is NULL with a
-- reason when the samples do not cover the window (e.g. the harness's process_start, which
-- begins before the sampler's first read).
CREATE TABLE phase_energies (
    run_id                UUID NOT NULL,
    seq                   INTEGER NOT NULL,
    phase                 VARCHAR NOT NULL,
    energy_gross_j        DOUBLE,          -- all rails of the device total, idle power included
    unavailable_reason    VARCHAR
);

-- Each inference's gross energy over [start_ns, start_ns + latency_ns]. With 10 Hz power
-- samples and millisecond inferences this is the interpolated power times the latency:
-- meaningful summed or averaged over many inferences, not one at a time.
ALTER TABLE latencies ADD COLUMN energy_gross_j DOUBLE;

-- Why a run has no energy at all (no power source, or the source failed), and the rails whose
-- sum is the device total (e.g. RAPL package-0 + dram, not package-0 + its core subzone).
ALTER TABLE runs ADD COLUMN energy_unavailable_reason VARCHAR;
ALTER TABLE runs ADD COLUMN power_rails VARCHAR[];

-- Sensors the sampler could not read, once per run, with the reason; they never stop a run.
CREATE TABLE sensor_notes (
    run_id   UUID NOT NULL,
    sensor   VARCHAR NOT NULL,
    reason   VARCHAR NOT NULL
);

-- The rails a baseline summed, so it is compared with runs on the same rails only.
ALTER TABLE baselines ADD COLUMN rails VARCHAR[];
