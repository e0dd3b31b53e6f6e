-- 0010_fleet: provenance of a run within a fleet of boards (docs/cli/collect.md, "Fleets").
--
--   device_class  groups identical units (e.g. 'pi5'): `collect --device-class`, or a sweep's
--                 device_class; the same rule as a device's name (contracts.device_name_problem)
--   unit_id       a unit's own id (a serial number, an asset tag): `collect --unit-id`
--   tags          a JSON object of string -> string: `collect --tag KEY=VALUE` (repeatable), or a
--                 sweep's `tags = { lab = "b2" }`; keys are identifiers
-- All three are NULL where not given: runs stored before this migration, imported runs without
-- them, collects that named none. The OS image and whether the run was inside a container are
-- per-run facts in runs.environment (os_image, kernel, container), not columns.

ALTER TABLE runs ADD COLUMN device_class VARCHAR;
ALTER TABLE runs ADD COLUMN unit_id VARCHAR;
ALTER TABLE runs ADD COLUMN tags JSON;
