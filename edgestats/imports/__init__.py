"""`edgestats import`: published tables and benchmark tools' output read, checked, named and written
as runs. Described in docs/architecture.md §9: importer.py plans and writes; the others are its
steps."""
