"""`python -m edgestats` is the `edgestats` command."""

from edgestats.cli import main

main()
