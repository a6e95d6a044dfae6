"""Read a Hugging Face ``config.json`` into a ModelSpec.

Supported ``model_type`` values and the fields read are listed in ``SUPPORTED``; anything else
is refused with the list. A mistyped field is refused naming the field; a missing one too, unless
transformers' config class has a default for it, which is then used (CLASS_DEFAULTS, or the
generic ones). What the file describes but the estimate does not size is said in the output
(ModelSpec.reading_notes).

The reading is split by concept, one module each:

- fields.py: one field read and checked; a value as a refusal quotes it
- json_file.py: the file a path names, and its JSON parsed strictly
- naming.py: the model's name in every output and export
- model_types.py: which model_types are read, aliased or refused
- defaults.py: the config classes' defaults for a field the file leaves out
- rope.py: RoPE: theta, scaling, partial rotary, layers without RoPE
- windows.py: sliding-window attention layers
- linears.py: biases and the MLP's activation
- dropout.py: dropout in training
- moe.py: experts, shared experts, router, multi-token prediction
- vision.py: vision towers' parameters (not sized, said)
- wrappers.py: multimodal wrappers' text_config and head tie
- family_fields.py: Gemma, Llama 4, ERNIE 4.5 and OLMoE's own fields
- type_fields.py: the fields one model_type reads beyond the common ones (for the typo check)
- read.py: read_hf_config, assembling the ModelSpec
"""
from __future__ import annotations

from .model_types import SUPPORTED
from .defaults import MAX_POSITIONS_DEFAULT
from .vision import llama4_vision_params, pixtral_params
from .read import read_hf_config

__all__ = ["read_hf_config", "MAX_POSITIONS_DEFAULT", "SUPPORTED", "llama4_vision_params", "pixtral_params"]
