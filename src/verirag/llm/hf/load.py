"""Loading a transformers checkpoint, and a GGUF file converted to one once.

GGUF files are dequantised by transformers to full precision, which is slow; the first load saves
the converted model (float32) and tokenizer with `save_pretrained` into
`cache_dir()/hf-converted/<first 16 hex of the GGUF sha256>/` ($VERIRAG_CACHE_DIR, else
~/.cache/verirag) and later loads read that folder.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from verirag.errors import CapabilityError, InputError, ModelNotFoundError
from verirag.models.cache_dir import cache_dir

log = logging.getLogger(__name__)

CONVERTED_SUBDIR = "hf-converted"
COMPLETE_MARKER = "verirag-converted.json"
_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
}


def import_torch():
    """(torch, transformers), or CapabilityError saying what to install."""
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise CapabilityError(
            "the hf backend needs torch and transformers: pip install 'verirag[hf]' (and torch)"
        ) from exc
    return torch, transformers


def converted_dir_for(sha256: str) -> Path:
    """Where the converted copy of a GGUF file with this sha256 lives."""
    return cache_dir() / CONVERTED_SUBDIR / sha256[:16]


def gguf_path_of(model: str, gguf_file: str | None) -> Path | None:
    """The GGUF file meant: `model` itself, or `gguf_file` (absolute, or in the folder `model`)."""
    if gguf_file is not None:
        path = Path(gguf_file) if Path(gguf_file).is_absolute() else Path(model) / gguf_file
    elif model.lower().endswith(".gguf"):
        path = Path(model)
    else:
        return None
    path = path.expanduser()
    if not path.is_file():
        raise ModelNotFoundError(f"GGUF file not found: {path}")
    return path


def resolve_dtype(dtype: Any, device: str):
    """A torch dtype: as given (a name or a dtype); by default bfloat16/float16 on GPU, float32 on CPU."""
    torch, _ = import_torch()
    if dtype is None:
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if isinstance(dtype, str):
        name = _DTYPES.get(dtype.lower().replace("torch.", ""))
        if name is None:
            raise InputError(f"unknown dtype {dtype!r}; use float32, float16 or bfloat16")
        return getattr(torch, name)
    return dtype


def _dtype_kwarg(dtype) -> dict[str, Any]:
    """transformers >= 4.56 calls it `dtype`; older versions `torch_dtype`."""
    import transformers
    from transformers import PreTrainedModel

    if "dtype" in inspect.signature(PreTrainedModel.from_pretrained).parameters:
        return {"dtype": dtype}
    try:
        from packaging.version import Version

        if Version(transformers.__version__) >= Version("4.56"):
            return {"dtype": dtype}
    except (ImportError, ValueError):  # pragma: no cover - no packaging, or an odd version string
        pass
    return {"torch_dtype": dtype}


def load_checkpoint(
    source: str,
    *,
    device: str,
    dtype,
    attn_implementation: str | None,
    trust_remote_code: bool,
    revision: str | None = None,
    gguf_file: str | None = None,
):
    """(model on `device` in eval mode, tokenizer with a pad token) from a hub id or a folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if revision:
        kwargs["revision"] = revision
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
    model_kwargs = dict(kwargs, **_dtype_kwarg(dtype))
    if gguf_file:
        # transformers >= 5 can keep GGUF weights packed (GgufLinear); ask for plain tensors,
        # which is what we save and what attention/logit extraction expects.
        try:
            from transformers.utils.quantization_config import GgufConfig
        except ImportError:  # transformers 4.x always dequantises
            pass
        else:
            model_kwargs["quantization_config"] = GgufConfig(gguf_file=gguf_file, dequantize=True)
    if attn_implementation:
        model_kwargs["attn_implementation"] = attn_implementation
    try:
        model = AutoModelForCausalLM.from_pretrained(source, **model_kwargs)
    except OSError as exc:
        raise ModelNotFoundError(f"cannot load model {source!r}: {exc}") from exc
    model.to(device)
    model.eval()
    if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def converted_gguf(gguf_path: Path, sha256: str, *, trust_remote_code: bool = False) -> str:
    """The folder with this GGUF converted to a transformers checkpoint; converts on first use."""
    target = converted_dir_for(sha256)
    if (target / COMPLETE_MARKER).is_file():
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock

    with FileLock(str(target) + ".lock", timeout=3600):
        if (target / COMPLETE_MARKER).is_file():  # another process converted it meanwhile
            return str(target)
        log.info("converting %s to a transformers checkpoint in %s (once)", gguf_path, target)
        torch, _ = import_torch()
        model, tokenizer = load_checkpoint(
            str(gguf_path.parent),
            gguf_file=gguf_path.name,
            device="cpu",
            dtype=torch.float32,
            attn_implementation=None,
            trust_remote_code=trust_remote_code,
        )
        quantizer = getattr(model, "hf_quantizer", None)
        if quantizer is not None:  # transformers >= 5 tags GGUF loads as "quantized"
            packed = [n for n, m in model.named_modules() if "gguf" in type(m).__name__.lower()]
            if packed:
                raise CapabilityError(
                    f"transformers kept {len(packed)} GGUF layers packed "
                    f"(e.g. {packed[0]}); cannot save a converted copy"
                )
            quantizer.remove_quantization_config(model)
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / COMPLETE_MARKER).write_text(
            json.dumps({"gguf": str(gguf_path), "sha256": sha256}, indent=1), encoding="utf-8"
        )
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
        del model
    return str(target)
