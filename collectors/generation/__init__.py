"""Generation workloads (kind "generation"): the worker's prefill / first token / decode phases,
the per-runtime engines that run the generation zoo (zoo/llama_arch.py), and the rows stored
(docs/generation.md)."""
