"""Framework adapters (one module per runtime, listed in edgestats.registry.runtimes), the model
file preparation step and the input batch every adapter feeds its model."""
