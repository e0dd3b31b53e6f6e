"""The store stage (docs/architecture.md §2): the results DB (results.py), its connections and
errors (database.py), schema migrations, the sandbox of user SQL, `sql` queries and the typed
view of imported extra columns (run_extra.py)."""
