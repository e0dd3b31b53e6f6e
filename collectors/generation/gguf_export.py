"""A generation zoo model as a GGUF file for llama.cpp, with the same weights every other runtime
loads. Its readers: llama-cpp-python and llama-bench (docs/generation.md).

The file is written with the `gguf` package from the state dict of zoo/llama.py (names and shapes:
zoo/llama_arch.py): architecture "llama", the zoo's constants as its metadata, each tensor under
llama.cpp's name (`gguf_tensor_name`). No Q/K permutation: the zoo's rotary layout is llama.cpp's
LLAMA rope (llama_arch.ROPE_LAYOUT). The vocabulary is llama.cpp's "no_vocab" type with VOCAB_SIZE
ids: token ids are bytes, with no tokenizer and no BOS/EOS, as for every runtime of the zoo.

Precisions: fp32 (every tensor F32) and fp16 (matrices F16, norms F32) are written here; llama.cpp's
quantisations (q8_0, q4_0) are made from the fp32 file by llama.cpp's own quantiser
(llama_model_quantize, through llama-cpp-python), as `llama-quantize` makes them.

numpy, gguf, torch and llama_cpp are imported only where used: `prepare` runs this in its own
process, and a device that only loads the GGUF needs none of the writer's packages.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from edgestats.collectors.zoo.llama_arch import (
    RMS_NORM_EPS,
    ROPE_THETA,
    LlamaConfig,
    gguf_tensor_name,
    llama_config,
    state_dict_shapes,
)

# edgestats precision -> llama.cpp file type (llama_ftype / gguf.LlamaFileType)
WRITTEN_TYPES = {"fp32": 0, "fp16": 1}  # ALL_F32, MOSTLY_F16: written by write_gguf
QUANTISED_TYPES = {"q8_0": 7, "q4_0": 2}  # MOSTLY_Q8_0, MOSTLY_Q4_0: by llama.cpp's quantiser
GGUF_PRECISIONS = (*WRITTEN_TYPES, *QUANTISED_TYPES)
# llama.cpp's vocabulary type for ids without a tokenizer (llama-vocab.cpp: "no_vocab" / "none")
NO_VOCAB = "no_vocab"


def gguf_file_name(name: str, seed: int, precision: str) -> str:
    """The file a model pack holds: llama15m-seed0.q8_0.gguf."""
    return f"{name}-seed{seed}.{precision}.gguf"


def _checked_weights(cfg: LlamaConfig, weights: Mapping[str, Any]) -> dict[str, Any]:
    """The state dict as float32 numpy arrays, in the zoo's order; a missing, extra or
    misshapen tensor is a one-line error."""
    import numpy as np

    shapes = state_dict_shapes(cfg)
    missing, extra = sorted(set(shapes) - set(weights)), sorted(set(weights) - set(shapes))
    if missing or extra:
        raise ValueError(
            f"{cfg.name}: weights do not match the zoo's state dict (missing {missing}, extra {extra})"
        )
    arrays = {}
    for name, shape in shapes.items():
        array = np.ascontiguousarray(np.asarray(weights[name], dtype=np.float32))
        if array.shape != shape:
            raise ValueError(f"{cfg.name}: {name} has shape {array.shape}, the zoo's is {shape}")
        arrays[name] = array
    return arrays


def write_gguf(path: Path, cfg: LlamaConfig, weights: Mapping[str, Any], precision: str, seed: int) -> Path:
    """Write `weights` (the zoo's state dict, any array-likes) as a GGUF of `precision` (fp32 or fp16)."""
    import gguf
    import numpy as np

    if precision not in WRITTEN_TYPES:
        raise ValueError(f"precision {precision!r}: write_gguf writes {', '.join(WRITTEN_TYPES)}")
    arrays = _checked_weights(cfg, weights)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(f"{cfg.name}-seed{seed}")
    writer.add_context_length(cfg.max_seq_len)
    writer.add_embedding_length(cfg.dim)
    writer.add_block_count(cfg.n_layers)
    writer.add_feed_forward_length(cfg.ffn_dim)
    writer.add_head_count(cfg.n_heads)
    writer.add_head_count_kv(cfg.n_kv_heads)
    writer.add_rope_dimension_count(cfg.head_dim)
    writer.add_rope_freq_base(ROPE_THETA)
    writer.add_layer_norm_rms_eps(RMS_NORM_EPS)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_tokenizer_model(NO_VOCAB)
    writer.add_file_type(WRITTEN_TYPES[precision])
    for name, array in arrays.items():
        # norms (1-D) stay F32 in every llama.cpp file type; matrices take the file's type
        matrix = array.astype(np.float16) if precision == "fp16" and array.ndim == 2 else array
        writer.add_tensor(gguf_tensor_name(name), matrix)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def quantize_gguf(source: Path, target: Path, precision: str, threads: int = 0) -> Path:
    """`source` (an fp32 GGUF) quantised by llama.cpp's own quantiser to `precision` (q8_0, q4_0)."""
    import llama_cpp

    if precision not in QUANTISED_TYPES:
        raise ValueError(
            f"precision {precision!r}: llama.cpp's quantiser makes {', '.join(QUANTISED_TYPES)} here"
        )
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANTISED_TYPES[precision]
    params.nthread = threads
    status = llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), params)
    if status != 0:
        raise RuntimeError(f"llama.cpp could not quantise {source} to {precision} (status {status})")
    return target


def state_dict_arrays(name: str, seed: int) -> dict[str, Any]:
    """The zoo model's seeded weights (zoo/llama.py, PyTorch) as float32 numpy arrays."""
    from edgestats.collectors.zoo.llama import build_llama

    model = build_llama(name, seed=seed)
    return {key: value.detach().float().numpy() for key, value in model.state_dict().items()}


def export_gguf(name: str, seed: int, precision: str, folder: Path) -> Path:
    """The zoo model `name` with its weights of `seed` as a GGUF of `precision` in `folder`."""
    if precision not in GGUF_PRECISIONS:
        raise ValueError(f"precision {precision!r}: a GGUF is one of {', '.join(GGUF_PRECISIONS)}")
    cfg, target = llama_config(name), Path(folder) / gguf_file_name(name, seed, precision)
    weights = state_dict_arrays(name, seed)
    if precision in WRITTEN_TYPES:
        return write_gguf(target, cfg, weights, precision, seed)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:  # the fp32 file the quantiser reads
        source = write_gguf(Path(scratch) / gguf_file_name(name, seed, "fp32"), cfg, weights, "fp32", seed)
        return quantize_gguf(source, target, precision)
