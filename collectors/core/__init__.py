"""What every part of the device side shares, below the adapters, generation and training. That is a
run's checked configuration, the spool a worker writes, child process groups, and a sweep's limits.
"""
