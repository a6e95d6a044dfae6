"""A standard shape for a bare parameter count (``--params 70B``).

When only a size is known, shardwise assumes a Llama-3-style decoder (SwiGLU, RMSNorm, GQA
with 8 KV heads, 128k vocabulary, untied head) whose width and depth follow the Llama 3
family's aspect ratios: layers and hidden interpolated in log-size between the published
shapes below, FFN about 3.5 x hidden rounded to 256, head dim 128. The output says the shape
was inferred (``ModelSpec.inferred``).
"""
from __future__ import annotations

import math

from .errors import InputError
from .params import total_params
from .schema import ModelSpec

# (parameters, layers, hidden): Llama 3.2 1B/3B, Llama 3 8B/70B, Llama 3.1 405B configs
_ANCHORS = [(1.24e9, 16, 2048), (3.2e9, 28, 3072), (8.0e9, 32, 4096), (70.6e9, 80, 8192), (405.9e9, 126, 16384)]


def _interp(n: float) -> tuple[float, float]:
    x = math.log(n)
    pts = [(math.log(p), l, h) for p, l, h in _ANCHORS]
    if x <= pts[0][0]:
        lo, hi = pts[0], pts[1]
    elif x >= pts[-1][0]:
        lo, hi = pts[-2], pts[-1]
    else:
        lo, hi = next((a, b) for a, b in zip(pts, pts[1:]) if a[0] <= x <= b[0])
    t = (x - lo[0]) / (hi[0] - lo[0])
    return lo[1] + t * (hi[1] - lo[1]), math.exp(math.log(lo[2]) + t * (math.log(hi[2]) - math.log(lo[2])))


def infer_model(params: float) -> ModelSpec:
    if not 1e8 <= params <= 1e13:
        hint = f"; did you mean {params:g}B?" if 0.1 <= params <= 1e4 else ""
        raise InputError(f"--params: {params:.3g} parameters is outside the supported range 0.1B-10T{hint}")
    layers_f, hidden_f = _interp(params)
    hidden = max(512, int(round(hidden_f / 512)) * 512)
    heads = hidden // 128
    kv = 8 if heads % 8 == 0 else heads
    vocab = 128256
    # choose the depth (a multiple of 2, near the interpolated one) so that the total is closest
    layers_guess = max(2, int(round(layers_f)))
    best = None
    for layers in range(max(2, layers_guess - 40), layers_guess + 400):
        ffn = int(round(3.5 * hidden / 256)) * 256
        b = params / 1e9
        size = f"{b / 1000:.3g}t" if b >= 1000 else f"{b:.3g}b"       # 1T reads "inferred-1t", not 1e+03b
        spec = ModelSpec(name=f"inferred-{size}", layers=layers, hidden=hidden, ffn=ffn,
                         heads=heads, kv_heads=kv, vocab=vocab, inferred=True,
                         source=f"shape inferred from --params {params / 1e9:.4g}B (Llama 3 aspect ratios)")
        err = abs(total_params(spec) - params)
        if best is None or err < best[0]:
            best = (err, spec)
        elif total_params(spec) > params:
            break
    return best[1]
