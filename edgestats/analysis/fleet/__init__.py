"""The fleet analysis: are identical boards identical? Per device class, the variance between units,
between runs and within a run, and each unit against its class."""
