"""Results leaving one DB (docs/architecture.md §2): `merge` of many DBs into one, `export`
to hive-partitioned Parquet (parquet.py) and its `--append` (append.py); the lakes they make are
read by the store (store/lake.py)."""
