"""Training workloads: the worker, its PyTorch and TensorFlow loops, datasets, page-cache residency,
and the rows stored. The datasets are those the training worker reads, and the synthetic ones
`edgestats dataset make` writes."""
