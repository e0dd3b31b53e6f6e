"""The fleet analysis: per device class, the SD between units beside between-run and within-run, and
each unit against its class."""
