"""Power sources (one module per source, listed in edgestats.registry.power), the idle baseline
and the attribution of energy to phases and inferences."""
