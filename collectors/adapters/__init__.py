"""Framework adapters: one module per runtime, listed in edgestats.registry.runtimes.

Also the base of the runtimes that convert a model to a file (converting.py), and the input batch
every adapter feeds its model (inputs.py)."""
