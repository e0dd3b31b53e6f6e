"""The store stage (docs/architecture.md §2), the bottom layer: it imports no other stage. The
results DB (results.py), its connections and errors (database.py), schema migrations, the sandbox
of user SQL, `sql` queries, the typed view of imported extra columns (run_extra.py), lakes read in
place (lake.py: an export folder or a glob of DBs; its checks in lake_checks.py and lake_digests.py)
and `verify` of a DB (verify.py) or any path (lake_verify.py)."""
