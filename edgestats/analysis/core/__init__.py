"""What every analysis takes and returns, and the loop that runs them. The options of `analyze`
(declared once in flags.py), the result type and its JSON, the page filter's tags, and the loop
(run.py)."""
