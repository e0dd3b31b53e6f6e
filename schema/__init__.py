"""The DuckDB schema: numbered migrations (NNNN_name.sql, never edited once released) and
views.sql (re-applied with CREATE OR REPLACE VIEW whenever a DB is opened for writing).

This folder is installed as `edgestats.schema`; the .sql files are package data.
"""
