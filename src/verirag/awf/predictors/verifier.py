"""The trained verifier as a faithfulness predictor (issue 27): no LLM, a small cross-encoder.

    vanilla+verifier                      # the verifier shipped with verirag (verirag.learned.shipped)
    vanilla+verifier(verifier=DIR)        # DIR: made by `verirag train verifier`
    vanilla+verifier(verifier=DIR, read_top=2)   # each sentence reads its 2 lexically closest chunks
    vanilla+verifier(softmin=0)           # the answer's score: its weakest sentence's support alone

The answer is split into sentences; each is judged against every chunk of every passage
(`verirag.learned.verifier.TrainedVerifier.support`). The score is the weakest sentence's support,
made a smooth minimum by `softmin` (a temperature in logit units, `verirag.learned.verifier.
answer_logit`): never above the weakest sentence's, the same for an answer of one sentence, and
lower when another sentence is weak too, so that one changed sentence always lowers the score (with
the plain minimum, `softmin=0`, it ties wherever another sentence is weaker: in answers of several
sentences a swapped party scored below the right answer in fewer than half the dev pairs). The default, 0.25, is in `docs/results/verifier.md`
("How a sentence's scores combine"), measured by `benchmarks/verifier_answer_rule.py`;
`per_passage[i]` passage i's support averaged over the sentences, `best` the passage that
supports the answer most, and `sentences` each sentence's support with the id of its supporting
passage.
Each passage is read as its text (titles are not added: the verifier is trained on passage texts).
A question asked in a conversation (a `verirag.conversation.InContext` question, as the answer core
passes it) is read with its last two turns before it, as far as they fit the encoder's window
(older turns are cut: `TrainedVerifier.support`).
A verifier folder is loaded once per process (a service builds every GEN+verifier method, and each
would otherwise hold its own copy of the encoder).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from pathlib import Path

from verirag.awf.predictors.base import FaithfulnessPredictor, Verification, failed_request, invalid_input
from verirag.awf.registry import register
from verirag.conversation import question_and_history
from verirag.errors import InputError
from verirag.types import Passage

# The answer rule's temperature (logit units): swapped parties, numbers and negations in answers of
# several sentences are seen, and no dev or own-answer AUROC moves by more than 0.002
# (docs/results/verifier.md, "How a sentence's scores combine"). Stacks fitted on the plain
# minimum name softmin=0 in their sources.
DEFAULT_SOFTMIN = 0.25


@register("predictor", "verifier")
class TrainedVerifierPredictor(FaithfulnessPredictor):
    needs: tuple[str, ...] = ()
    uses_llm = False
    english_only = True  # trained on English benchmarks (docs/model-cards/verifier.md)

    def __init__(
        self, llm=None, *, verifier: str | None = None, read_top: int | None = None, softmin: float = DEFAULT_SOFTMIN
    ):
        from verirag.learned.shipped import shipped_verifier_dir

        if read_top is not None and read_top < 1:
            raise InputError(f"read_top must be at least 1, got {read_top}")
        softmin = float(softmin)
        if not 0 <= softmin < float("inf"):
            raise InputError(f"softmin must be a temperature of at least 0, got {softmin}")
        # a copy shares the loaded network; its own read_top and softmin do not change other methods'
        self.model = copy.copy(loaded_verifier(verifier or shipped_verifier_dir()))
        if read_top is not None:  # cheaper: each sentence reads only its closest chunks
            self.model.read_top = read_top
        self.model.softmin = softmin
        self.name = f"verifier[{self.model.encoder}]"

    def model_fingerprint(self) -> str:
        return f"verifier:{self.model.adapter_sha256_[:16]}:{self.model.fingerprints.get('encoder', '')}"

    def verify(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        return self.verify_batch([(question, answer, passages)])[0]

    def verify_batch(self, items: Sequence[tuple[str, str, Sequence[Passage]]]) -> list[Verification]:
        """Every answer's pairs scored together (`TrainedVerifier.support_many`); an answer that
        cannot be read (e.g. punctuation only, passages without text) gets its failure in its place."""
        out: list[Verification | None] = [None] * len(items)
        todo, questions, histories = [], [], []
        for i, (question, answer, passages) in enumerate(items):
            bad = invalid_input(answer, passages)
            if bad is not None:
                out[i] = bad
                continue
            bare, history = question_and_history(question)
            todo.append(i)
            questions.append(bare)
            histories.append(history)
        supports = self.model.support_many(
            questions,
            [items[i][1] for i in todo],
            [[p.text for p in items[i][2]] for i in todo],
            histories,
        )
        for i, s in zip(todo, supports):
            passages = items[i][2]
            if isinstance(s, InputError):
                out[i] = failed_request("the trained verifier", s, len(passages))
                continue
            sentences = [
                {"text": x.text, "score": x.score, "supporting_passage": passages[x.passage].id} for x in s.sentences
            ]
            out[i] = Verification(score=s.score, per_passage=list(s.per_passage), best=s.best, sentences=sentences)
        return out  # type: ignore[return-value]  # every place is filled


_LOADED: dict[tuple, object] = {}
_LOADING = threading.Lock()


def loaded_verifier(folder: str | Path):
    """The TrainedVerifier saved in `folder`, loaded once per process (again when its files change)."""
    from verirag.learned.verifier import ADAPTER_FILE, META_FILE, TrainedVerifier

    folder = Path(folder).expanduser().resolve()
    stamp = tuple(
        (f.stat().st_mtime_ns, f.stat().st_size) if f.is_file() else None
        for f in (folder / META_FILE, folder / ADAPTER_FILE)
    )
    with _LOADING:
        key = (str(folder), stamp)
        if key not in _LOADED:
            _LOADED[key] = TrainedVerifier.load(folder)
        return _LOADED[key]
