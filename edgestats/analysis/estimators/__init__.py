"""The shared estimators of the analyses. They are intervals (bootstrap, t, order statistics),
bounded intervals, ratios, correlations, run-level (hierarchical) figures, tails, modality, Holm's
adjustment and the until-precise stopping rule.
"""
