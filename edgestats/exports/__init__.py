"""Results leaving one DB (docs/architecture.md §2): `merge` of many DBs into one, `export`
to hive-partitioned Parquet (parquet.py) and its `--append` (append.py), and lakes read in place."""
