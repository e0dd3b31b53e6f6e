"""The tradeoff analysis: memory against latency, the Pareto front and the best configuration per
metric (pCAMP Insight 2).
"""
