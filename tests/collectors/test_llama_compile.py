"""Generation's torch-compile runtime (collectors/generation/torch_engine.py): the model compiled
with the engine's options (inductor, automatic dynamic shapes) gives eager's logits and greedy
tokens over a context, a prompt and decode steps at growing cache lengths, without compiling a
graph per step. A small configuration keeps the compile short; `collect --kind generation
--runtime torch-compile` compiles llama15m the same way in its `compile` phase (about 2 minutes on
2 busy cores, so no collect runs here).
Cost: about 35 s of test time in make test's parallel lane (2 cores; inductor's C++ builds).
"""

from __future__ import annotations

import pytest
from llama_builders import TINY, tiny_model

from edgestats.collectors.zoo.llama_arch import seeded_tokens

pytestmark = pytest.mark.frameworks


def test_compiled_generation_equals_eager_and_does_not_recompile_per_step():
    import torch

    from edgestats.collectors.generation.torch_engine import COMPILE_OPTIONS
    from edgestats.collectors.zoo.llama import KVCache

    torch._dynamo.reset()
    # the counters are the process's, kept across reset(): another test's compiles in this (xdist)
    # worker would count here (CI counted 9 graphs that way)
    torch._dynamo.utils.counters.clear()
    model = tiny_model()
    compiled = torch.compile(model, **COMPILE_OPTIONS)
    context, prompt = seeded_tokens(1, 2, 3, "context"), seeded_tokens(1, 2, 5, "prompt")

    def generate(call) -> tuple[list, list]:
        cache = KVCache(TINY, 2, 3 + 5 + 8, torch.float32)
        with torch.no_grad():
            call(torch.tensor(context), cache)
            logits = [call(torch.tensor(prompt), cache)[:, -1]]
            for _ in range(7):
                logits.append(call(logits[-1].argmax(-1)[:, None], cache)[:, -1])
        return [x.argmax(-1).tolist() for x in logits], logits

    eager_tokens, eager_logits = generate(model)
    tokens, logits = generate(compiled)
    assert tokens == eager_tokens
    assert all(torch.allclose(a, b, atol=1e-4, rtol=1e-4) for a, b in zip(logits, eager_logits))
    frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert frames <= 4, f"{frames} graphs compiled for 9 calls: the cache length must not recompile"
