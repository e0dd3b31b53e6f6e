"""The hyperparams analysis: OLS/ANOVA of a response on its factors, main effects and the best
configuration (the DLaaS tables).
"""
