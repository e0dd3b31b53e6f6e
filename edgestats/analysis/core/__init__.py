"""What every analysis takes and returns: the options of `analyze` (declared once in flags.py), the
result type and its JSON, the page filter's tags, and the loop that runs the analyses (run.py).
"""
