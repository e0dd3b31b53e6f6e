"""Sampling the worker from outside: the sampler thread, its /proc and /sys readers, and the rows
its telemetry becomes. The telemetry of one collect (sampler + power source) is turned into rows per
run; what doctor checks of the machine's noise is here too (noise_checks.py)."""
