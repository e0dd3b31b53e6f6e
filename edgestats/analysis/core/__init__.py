"""What every analysis takes and returns: the options of `analyze`, the result type and its JSON, the
page filter's tags.
"""
