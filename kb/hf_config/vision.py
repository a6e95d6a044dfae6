"""Parameter counts of the vision towers and projectors a multimodal config.json describes and
the estimate does not size (said in the answer's reading notes).
"""
from __future__ import annotations

from .fields import FIELD_MAX


def vision_params(vision: dict, text_hidden: int) -> int:
    """Parameters of a SigLIP vision tower (transformers modeling_siglip.py: patch embedding, a
    learned position per patch, layers of attention with biases and a GELU MLP, two LayerNorms
    each, a final LayerNorm) and Gemma3MultiModalProjector's vision x text projection and
    RMSNorm: the part of a Gemma 3 checkpoint its text_config does not describe.
    SiglipVisionConfig's defaults where the file leaves a field out."""
    def num(key, default):
        v = vision.get(key, default)
        return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= FIELD_MAX else default
    h, f, n = num("hidden_size", 768), num("intermediate_size", 3072), num("num_hidden_layers", 12)
    patch, image, ch = num("patch_size", 16), num("image_size", 224), num("num_channels", 3)
    layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    return ch * patch * patch * h + h + (image // patch) ** 2 * h + n * layer + 2 * h + h * text_hidden + h


def llama4_vision_params(vision: dict, text_hidden: int) -> int:
    """Parameters of Llama 4's vision tower and projector (transformers modeling_llama4.py
    Llama4VisionModel: class embedding, a learned position per patch and one for the class
    token, the unfolded patch embedding (channels x patch^2 x h, no bias), pre and post
    LayerNorms, layers of biased attention and a biased GELU MLP with two LayerNorms each, the
    pixel-shuffle adapter's fc1 (intermediate_size x projector_input_dim) and fc2
    (projector_output_dim squared), both without bias; Llama4MultiModalProjector's
    vision_output_dim x text hidden, biased where multi_modal_projector_bias). Llama4VisionConfig's
    defaults where the file leaves a field out."""
    def num(key, default):
        v = vision.get(key, default)
        return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= FIELD_MAX else default
    h, f, n = num("hidden_size", 768), num("intermediate_size", 5632), num("num_hidden_layers", 34)
    patch, image, ch = num("patch_size", 14), num("image_size", 448), num("num_channels", 3)
    p_in, p_out, out = num("projector_input_dim", 4096), num("projector_output_dim", 4096), \
        num("vision_output_dim", 7680)
    layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    bias = text_hidden if vision.get("multi_modal_projector_bias") is True else 0
    return (h + ((image // patch) ** 2 + 1) * h + ch * patch * patch * h + 2 * 2 * h + n * layer
            + f * p_in + p_out * p_out + out * text_hidden + bias)


def moonvit_params(vision: dict, text_hidden: int) -> int:
    """Parameters of Kimi K2.5's MoonViT vision tower and projector (transformers 5.24
    modeling_kimi_k25.py, counted on the meta device: a biased patch embedding (channels x
    patch^2 x h), a learned pos_emb_height x pos_emb_width position grid, layers of biased q/k/v/o
    and a biased fc1/fc2 MLP with two LayerNorms each (vision_params' layer), a final LayerNorm;
    the projector's LayerNorm of h, then biased linears of h x merge^2 square and h x merge^2 by
    the text hidden size). Kimi_K25VisionConfig's defaults where the file leaves a field out."""
    def num(key, default):
        v = vision.get(key, default)
        return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= FIELD_MAX else default
    h, f, n = num("hidden_size", 1152), num("intermediate_size", 4304), num("num_hidden_layers", 27)
    patch, ph, pw = num("patch_size", 14), num("pos_emb_height", 64), num("pos_emb_width", 64)
    merge = vision.get("merge_kernel_size", (2, 2))
    if not (isinstance(merge, (list, tuple)) and len(merge) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 64 for x in merge)):
        merge = (2, 2)
    layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    m = h * merge[0] * merge[1]
    return 3 * patch * patch * h + h + ph * pw * h + n * layer + 2 * h + 2 * h + m * m + m + m * text_hidden + text_hidden


def pixtral_params(outer: dict, text_hidden: int) -> int:
    """Parameters of a Mistral 3 checkpoint's Pixtral vision tower and projector (transformers 5.24
    modeling_pixtral.py PixtralVisionModel: a bias-free patch convolution (channels x patch^2 x h),
    an RMSNorm, layers of bias-free q/k/v/o (h x h each) and a bias-free gated MLP (3 h f) with two
    RMSNorms; modeling_mistral3.py Mistral3MultiModalProjector: an RMSNorm of h, the patch merger's
    h merge^2 x h, linear_1 (h x the feature layers it concatenates) x text hidden and linear_2 text
    hidden square, biased where multimodal_projector_bias). PixtralVisionConfig's and
    Mistral3Config's defaults where the file leaves a field out. The wrapper's own fields
    (spatial_merge_size, vision_feature_layer, multimodal_projector_bias) size the projector, so
    this reads the whole file."""
    vision = outer.get("vision_config") if isinstance(outer.get("vision_config"), dict) else {}

    def num(cfg, key, default):
        v = cfg.get(key, default)
        return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= FIELD_MAX else default
    h, f, n = num(vision, "hidden_size", 1024), num(vision, "intermediate_size", 4096), \
        num(vision, "num_hidden_layers", 24)
    patch, ch, merge = num(vision, "patch_size", 16), num(vision, "num_channels", 3), \
        num(outer, "spatial_merge_size", 2)
    layers = outer.get("vision_feature_layer", -1)
    feature = len(layers) if isinstance(layers, list) and layers else 1
    bias = outer.get("multimodal_projector_bias") is True
    tower = ch * patch * patch * h + h + n * (4 * h * h + 3 * h * f + 2 * h)
    return tower + h + h * merge * merge * h + (h * feature + bias) * text_hidden + (text_hidden + bias) * text_hidden


VISION_PARAMS = {"llama4": llama4_vision_params, "kimi_k25": moonvit_params}
# the ones that read the wrapper's own fields too, given the whole file
WRAPPER_VISION_PARAMS = {"mistral3": pixtral_params}
