"""The answers analysis: per comparable group, which candidate is fastest, the others' ratios to it and
a verdict in words.
"""
