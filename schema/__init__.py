"""The DuckDB schema: numbered migrations (NNNN_name.sql) and views.sql. A migration is never edited
once released; views.sql is re-applied with CREATE OR REPLACE VIEW whenever a DB is opened for
writing.

This folder is installed as `edgestats.schema`; the .sql files are package data.
"""
