"""Results leaving one DB (docs/architecture.md §2): `merge`, `export` to Parquet and its
`--append`. `merge` makes one DB of many; `export` writes hive-partitioned Parquet (parquet.py) and
`--append` adds to it (append.py); the lakes they make are read by the store (store/lake.py)."""
