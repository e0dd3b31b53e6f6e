"""Library functions that join the stages for a command, for the CLI and the Python API alike.

A collect's sweep with its progress (the device side), the until-precise loop (the collectors'
rounds with the analysis' stopping rule), an analysis written as a report (the analysis' loaders
with the report's drawing). The CLI and the Python API call these; each stage below stays
unaware of the others.
"""
