"""The model zoo: architecture tables shared by the PyTorch and Keras builders, and the catalog of
zoo models with their published parameter counts."""
