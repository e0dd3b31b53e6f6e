"""`edgestats import` (docs/architecture.md §9): published tables and benchmark tools' output
read, checked, named and written as runs. importer.py plans and writes; the others are its steps."""
