"""The fleet analysis: per device class, the variance between units, between runs and within a run,
and each unit against its class (are identical boards identical?)."""
