"""Generation workloads (kind "generation", docs/generation.md): the worker, the per-runtime engines
and the rows stored. The worker runs the prefill / first token / decode phases; the engines run the
generation zoo (zoo/llama_arch.py)."""
