"""Facts about the device a collect runs on: hardware and OS facts, and which frameworks and tools
import here (probes, each in a fresh process)."""
