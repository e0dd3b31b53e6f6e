"""Sampling the worker from outside: the sampler thread, its /proc and /sys readers, and the
telemetry of one collect (sampler + power source) turned into rows per run, and what doctor
checks of the machine's noise (noise_checks.py)."""
