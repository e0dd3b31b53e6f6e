"""The summary analysis: per configuration, latency, throughput, memory and energy with run-level
intervals.
"""
