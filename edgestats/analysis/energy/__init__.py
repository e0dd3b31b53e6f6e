"""The energy analysis: the time-energy line and correlation, and energy per phase above idle (pCAMP
Insight 3).
"""
