"""A PEFT adapter's adapter_config.json where a model's config.json belongs.

A LoRA fine-tune's output folder holds adapter_config.json (PEFT's LoraConfig, saved by
save_pretrained) and no config.json: it names the model it adapts (base_model_name_or_path) and
its rank (r), but describes no layers. Read as a model config it was 'missing model_type', with
the model types listed, as though the file were a broken one; it is refused as what it is."""
from __future__ import annotations

from ..errors import InputError
from .fields import _show

# the file name PEFT saves an adapter's config under (peft.utils.constants.CONFIG_NAME)
ADAPTER_FILE = "adapter_config.json"


def refuse_adapter(cfg: dict, path: str) -> None:
    """Refuse a PEFT adapter config (a ``peft_type`` field, which no transformers model config has),
    naming the base model it adapts and the rank to give as --lora-rank."""
    if "peft_type" not in cfg:
        return
    base = cfg.get("base_model_name_or_path")
    named = f" (base_model_name_or_path: {_show(base)})" if isinstance(base, str) and base else ""
    rank = cfg.get("r")
    rank_flag = f" and --lora-rank {rank}" if isinstance(rank, int) and not isinstance(rank, bool) and rank > 0 else ""
    raise InputError(f"{path}: a PEFT adapter's config (peft_type {_show(cfg['peft_type'])}), not a model's: give the "
                     f"base model's config.json{named}, or --model, with --training lora or qlora{rank_flag}")
