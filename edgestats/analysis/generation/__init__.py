"""The generation analysis: time to first token, tokens per second, inter-token latencies, energy per
token, decode time against context depth.
"""
