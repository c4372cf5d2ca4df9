"""What the learned parts over the packaged encoder (the trained verifier, the context pruner) share:
their fine-tuned layers saved as a small adapter beside their JSON, checked by its sha256 when
loaded, and put back over the installed encoder (refused over other encoder weights)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from verirag.errors import InputError
from verirag.models.hashing import sha256_file

ADAPTER_FILE = "adapter.safetensors"


class EncoderAdapter:
    """Mixed into a LearnedPart with `_scorer`, `_trainable`, `encoder`, `train_layers`,
    `compress_rank` and `_load_base()`; `noun` names it in messages ("verifier")."""

    noun: ClassVar[str]

    def save_weights(self, directory: Path) -> None:
        from verirag.learned.verifier_model import save_adapter

        save_adapter(self._scorer, self._trainable, directory / ADAPTER_FILE)
        self.adapter_sha256_ = sha256_file(directory / ADAPTER_FILE)
        self.adapter_bytes_ = (directory / ADAPTER_FILE).stat().st_size

    def restore(self, state: dict[str, Any], path: Path) -> None:
        super().restore(state, path)
        adapter = path / ADAPTER_FILE
        remake = f"make a new one with `{self.fit_command}`"
        if not adapter.is_file():
            raise InputError(f"{path}: the adapter weights {ADAPTER_FILE} are missing; {remake}")
        if sha256_file(adapter) != self.adapter_sha256_:  # a file cut short or changed since
            raise InputError(f"{adapter}: the weights differ from those the {self.noun} was saved with; {remake}")
        self._adapter_path = adapter

    def _put_adapter_back(self, path: str | Path) -> None:
        """After `load` read the JSON: refuse other encoder weights, load the encoder, put the
        adapter's weights in (LoRA-shaped when compressed, then folded into the weights)."""
        from verirag.learned.encoders import encoder_fingerprint
        from verirag.learned.verifier_model import add_lora, load_adapter, merge_lora

        self.check_expected(
            {"encoder": encoder_fingerprint(self.encoder)}, where=f"{path} over the installed encoder {self.encoder}"
        )
        self._load_base()
        if self.compress_rank:
            add_lora(self._scorer, self.train_layers, self.compress_rank)
        self._trainable = load_adapter(self._scorer, self._adapter_path)
        if self.compress_rank:
            merge_lora(self._scorer)
