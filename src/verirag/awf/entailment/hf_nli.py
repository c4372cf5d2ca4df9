"""Entailment from a Hugging Face sequence-classification NLI model (as in the AwF paper,
e.g. MoritzLaurer/deberta-v3-large-zeroshot-v2.0). Any hub id or local folder works;
the GPU is used when one exists."""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.entailment.base import EntailmentModel, Judgement
from verirag.awf.registry import register
from verirag.errors import ModelNotFoundError

_DEFAULT_MODEL = "MoritzLaurer/deberta-v3-large-zeroshot-v2.0"


def entailment_label_index(id2label: dict[int, str]) -> int:
    """The output index whose label names entailment ("entailment", "ENTAILMENT", "entail")."""
    for idx, label in id2label.items():
        if str(label).lower().startswith("entail"):
            return int(idx)
    raise ModelNotFoundError(f"the model's labels {id2label} have no entailment label")


@register("entailment", "hf_nli")
class HFNLIEntailment(EntailmentModel):
    def __init__(
        self, model: str = _DEFAULT_MODEL, *, device: str | None = None, batch_size: int = 8, max_length: int = 512
    ):
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as e:
            raise ModelNotFoundError("the HF NLI backend needs transformers: pip install 'verirag[hf]'") from e
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.model = AutoModelForSequenceClassification.from_pretrained(model).to(self.device).eval()
        except OSError as e:
            raise ModelNotFoundError(
                f"cannot load NLI model {model!r}: {e}. Give a local folder, or a hub id on a machine "
                "with network access; offline, use the LLM judge (--judge llm)."
            ) from e
        self.entail_idx = entailment_label_index(self.model.config.id2label)
        self.batch_size = batch_size
        self.max_length = max_length
        self.name = f"hf-nli:{model}"
        self._torch = torch

    def max_premise_words(self, hypothesis: str) -> int:
        used = len(self.tokenizer(hypothesis)["input_ids"]) + 8
        return max(32, int((self.max_length - used) * 0.7))

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        out: list[Judgement] = []
        torch = self._torch
        for i in range(0, len(pairs), self.batch_size):
            batch = pairs[i : i + self.batch_size]
            enc = self.tokenizer(
                [p for p, _ in batch],
                [h for _, h in batch],
                truncation="only_first",
                max_length=self.max_length,
                padding=True,
                return_tensors="pt",
            ).to(self.device)
            with torch.inference_mode():
                probs = torch.softmax(self.model(**enc).logits.float(), dim=-1)[:, self.entail_idx]
            out.extend(Judgement(prob=float(p)) for p in probs.cpu().tolist())
        return out
