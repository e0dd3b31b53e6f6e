"""Training workloads: the training worker, its PyTorch and TensorFlow loops, the datasets it reads
(and the synthetic ones `edgestats dataset make` writes), page-cache residency, and the rows stored."""
