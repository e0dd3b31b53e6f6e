-- 0006_dataset_size: datasets as a dimension (docs/schema.md, "runs").
--
-- runs.dataset becomes one spelling per dataset, the same for collected and imported runs, so
-- that they group together: lowercase, every character but a-z and 0-9 dropped ('MNIST' ->
-- 'mnist', 'CIFAR-10' -> 'cifar10'; edgestats/imports/columns.py, dataset_name). A collected run
-- used to store '<format>:<directory name>': it now stores the format (mnist, cifar10), or an
-- image folder's name, and the directory it read goes to dataset_path.
--
-- The dataset's size: samples in the training split (what one epoch reads) and in the held-out
-- split, bytes of its files on disk, and the stored image size (NULL for an image folder, whose
-- files each have their own). Collected runs get them from the worker's description of the
-- dataset, which runs stored before this migration hold in environment.dataset: they are filled
-- from there. Imported runs get what the table gives (NULL otherwise: never invented).

ALTER TABLE runs ADD COLUMN dataset_path VARCHAR;
ALTER TABLE runs ADD COLUMN dataset_samples INTEGER;       -- training samples
ALTER TABLE runs ADD COLUMN dataset_test_samples INTEGER;  -- held-out samples
ALTER TABLE runs ADD COLUMN dataset_bytes BIGINT;          -- on disk, every file the splits read
ALTER TABLE runs ADD COLUMN dataset_image_h INTEGER;
ALTER TABLE runs ADD COLUMN dataset_image_w INTEGER;
ALTER TABLE runs ADD COLUMN dataset_image_c INTEGER;

UPDATE runs SET
    dataset_path         = json_extract_string(environment, '$.dataset.root'),
    dataset_samples      = TRY_CAST(json_extract_string(environment, '$.dataset.n_train') AS INTEGER),
    dataset_test_samples = TRY_CAST(json_extract_string(environment, '$.dataset.n_test') AS INTEGER),
    dataset_bytes        = TRY_CAST(json_extract_string(environment, '$.dataset.bytes') AS BIGINT),
    dataset_image_h      = TRY_CAST(json_extract_string(environment, '$.dataset.image_hw[0]') AS INTEGER),
    dataset_image_w      = TRY_CAST(json_extract_string(environment, '$.dataset.image_hw[1]') AS INTEGER),
    dataset_image_c      = TRY_CAST(json_extract_string(environment, '$.dataset.channels') AS INTEGER)
WHERE source = 'collect' AND kind = 'training' AND json_extract_string(environment, '$.dataset.root') IS NOT NULL;

UPDATE runs SET dataset = coalesce(nullif(regexp_replace(lower(d.bare), '[^a-z0-9]', '', 'g'), ''), lower(trim(d.bare)))
FROM (SELECT run_id,
             CASE WHEN source <> 'collect' OR NOT contains(dataset, ':') THEN dataset
                  WHEN dataset LIKE 'imagefolder:%' THEN substr(dataset, length('imagefolder:') + 1)
                  ELSE split_part(dataset, ':', 1) END AS bare
      FROM runs WHERE dataset IS NOT NULL) d
WHERE runs.run_id = d.run_id;
