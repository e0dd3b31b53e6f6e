"""`edgestats compare`'s statistics: B against A per matched configuration, the overall ratio,
verdicts, cautions and the minimum detectable effect.
"""
