"""Lookback: the factuality classifier over attention lookback ratios (Geissler et al., section 3.3).

    vanilla+lookback(classifier=clf.json)

The generator's conversation and its reply are read again in one teacher-forced pass of the
attention model (HF transformers, eager attention); the lookback ratios of the reply
(`verirag.llm.lookback`) go through the trained classifier (`verirag.learned.lookback_classifier`,
`verirag train lookback`), and the score is its P(factual). The reply is read as the generator
wrote it (the raw generation, before any answer parsing), as in training.

The attention model is the answering model when that runs on the HF backend with the weights the
classifier was trained on; otherwise the classifier's own `attention_model` (e.g.
hf:qwen2.5-0.5b, the same GGUF that llama.cpp answers with), or `attention_model=` here. A model
without attention weights fails at construction (CapabilityError); one with other weights than
the classifier's fails too (InputError), since its heads mean something else.

An outside answer (`verify(question, answer, passages)`) is read in the conversation the Vanilla
generator would have had. Which passage supports the answer is attributed lexically (K-Precision),
as self_check does.
"""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.component import fingerprint_of
from verirag.awf.generators.base import Answer
from verirag.awf.predictors._conversation import ConversationPredictor
from verirag.awf.registry import register
from verirag.errors import CapabilityError, InputError
from verirag.learned.lookback_classifier import LookbackClassifier
from verirag.llm.base import ATTENTIONS, LLM
from verirag.llm.lookback import LookbackRatios
from verirag.prompts import DEFAULT_LAYOUT, check_layout
from verirag.types import Passage


def attention_llm(llm: LLM, classifier: LookbackClassifier, attention_model: str | None) -> LLM:
    """The model whose attention the classifier reads (see the module docstring)."""
    trained_on = classifier.fingerprints.get("model", "")
    if (
        attention_model is None
        and ATTENTIONS in llm.capabilities
        and (not trained_on or fingerprint_of(llm) == trained_on)
    ):
        return llm
    spec = attention_model or classifier.provenance.get("attention_model")
    if not spec:
        raise CapabilityError(
            f"lookback reads attention weights, which {llm.backend} model {llm.model_id!r} "
            "does not give; answer with an hf: model or pass attention_model=hf:..."
        )
    from verirag.llm.factory import load_llm
    from verirag.llm.metered import MeteredLLM

    att = MeteredLLM(load_llm(spec))  # its reading counts in the answer's usage
    att.require(ATTENTIONS)
    classifier.check_expected({"model": fingerprint_of(att)}, where=spec)
    return att


def reply_ratios(llm: LLM, answer: Answer, passages: Sequence[Passage]) -> LookbackRatios:
    """The lookback ratios of a generator's raw reply in its own conversation (training and
    inference both read them here)."""
    reply = answer.generation.text if answer.generation is not None else answer.text
    return llm.lookback_ratios(answer.prompt, reply, [p.text for p in passages])


@register("predictor", "lookback")
class LookbackPredictor(ConversationPredictor):
    needs: tuple[str, ...] = ()  # the attention model's capability, checked in attention_llm
    request_name = "lookback"

    def __init__(
        self,
        llm: LLM,
        *,
        classifier: str | None = None,
        attention_model: str | None = None,
        layout: str = DEFAULT_LAYOUT,
    ):
        if not classifier:
            raise InputError(
                "lookback needs classifier=PATH, a classifier trained with `verirag train lookback RUN_DIR --out PATH`"
            )
        self.classifier = LookbackClassifier.load(classifier)
        self.llm = attention_llm(llm, self.classifier, attention_model)
        self.layout = check_layout(layout)  # of the Vanilla conversation `verify` builds for an outside answer
        self.variant = self.classifier.variant
        self.name = f"lookback[{self.variant}, {self.llm.model_id}]"

    def ratios(self, answer: Answer, passages: Sequence[Passage]) -> LookbackRatios:
        return reply_ratios(self.llm, answer, passages)

    def conversation_score(self, answer: Answer, passages: Sequence[Passage]) -> tuple[float, str | None]:
        return self.classifier.score(self.ratios(answer, passages)), None
