"""The defaults: the method that answers and verifies when the user names none.

Every entry point reads them from here, through the answer spec's one `resolve()`
(`verirag.awf.answer_spec`): `Pipeline` and `Verifier` in Python, `verirag ask`, `verirag verify`,
`/v1/ask`, `/v1/verify`, the web page and both framework integrations; each reports the method it
used (`method` in every JSON result).

An answer given to verify (`Verifier`, `verirag verify`, `/v1/verify`, `Pipeline.verify`) is judged
by the trained verifier shipped in the package (`verirag.learned.shipped`, DEFAULT_METHOD): about
0.1 s, no LLM call, so verifying never loads a generator. On other LLMs' answers NLI leads on
conversational follow-ups and the verifier on a kind of document it never trained on; neither is
better everywhere (docs/results/cascade.md).

An answer verirag generates with the embedded default model (STACK_MODEL) is judged by the shipped
stacked verifier (GENERATED_DEFAULT): the verifier's score beside the generation's own token
log-probabilities and the model's own yes/no judgement of the answer over the passages it read
(`llm_judge`, one short LLM call after the answer that reuses the answer's prompt prefix: about a
quarter of the generation's time, a ninth of nli's), combined by a logistic regression fitted on the
model's answers to training questions (docs/model-cards/stack.md). On that model's own answers to
held-out questions it ranks right above wrong above the stack without the judge and the verifier
alone (AUROC: multi-hop HotpotQA 0.683 against 0.649 and 0.561, nli over every passage 0.681; NQ
0.778 against 0.755 and 0.698; the gains over the stack without the judge are within their paired
95% intervals, docs/results/verifier.md). On the multi-hop answers `ask` makes since pruning went on
(300, pruned) it is above nli over every paragraph: 0.726 against 0.646, +0.080 [+0.005, +0.161], at
about an eighth of nli's seconds after the answer. Where it cannot judge (another engine's fingerprint, an answer without
log-probabilities, no LLM to ask) the verifier judges alone and the result's warnings say so; a
given answer never has the generation's log-probabilities, so it goes to the verifier directly.
Another model gets DEFAULT_METHOD: the stack was fitted for this one. `vanilla+verifier`,
`vanilla+nli` and the stack without the judge are one option away (`method=`, `--method`, `--judge`).
"""

from __future__ import annotations

DEFAULT_METHOD = "vanilla+verifier"
# The model the shipped stack was fitted for (a test holds it to the stack's own record), and the
# method that judges that model's own answers by default.
STACK_MODEL = "qwen2.5-1.5b"
GENERATED_DEFAULT = "vanilla+stacked(fallback=verifier)"


def default_method(model: str | None) -> str:
    """The method a pipeline of `model` runs when none is named (module doc): the stack for the
    model it was fitted for, the verifier for any other."""
    return GENERATED_DEFAULT if model == STACK_MODEL else DEFAULT_METHOD


def given_answer_method(method: str) -> str:
    """The method an answer given to verify is judged by, where `method` judges generated answers:
    `method` itself, except a stack with a fallback, whose fallback judges it (a given answer has no
    generation log-probabilities for the stack): `vanilla+stacked(fallback=verifier)` ->
    `vanilla+verifier`."""
    from verirag.awf.spec import MethodSpec, split_name

    spec = MethodSpec.parse(method)
    unified, generator, predictor = split_name(spec.name)
    fallback = spec.routed().get("predictor", {}).get("fallback")
    if unified or predictor != "stacked" or not fallback:
        return method
    return f"{generator}+{fallback}"


# The method that uses an entailment judge: what `--judge` selects when no method is named, and
# what error messages suggest to a user whose method cannot verify a given answer.
JUDGED_METHOD = "vanilla+nli"


def judged_method(method: str | None, judge: str | None, default: str = DEFAULT_METHOD) -> str:
    """The method a (method, judge) choice runs, the same at every door (`ask`, `Verifier`,
    `verirag verify`, `serve`'s /v1/ask and /v1/verify): a named method stands (a judge it cannot
    use is its builder's InputError); none named, a judge selects JUDGED_METHOD, the method that
    uses one; neither, `default`."""
    if method:
        return named_by_judge(method)
    return JUDGED_METHOD if judge else default


VERIFY_GENERATOR = "vanilla"  # the generator a judge's name is read with: verifying a given answer generates nothing


def named_by_judge(method: str) -> str:
    """A method named by what judges: a predictor's name alone ("verifier", "nli(premise=evidence)",
    "cascade") is that predictor after the plain generator ("vanilla+verifier", ...). Verifying a
    given answer runs no generator, so "vanilla+verifier" and "instructrag+verifier" verify alike;
    the judge is the name that says what happens. Any other name stands."""
    from verirag.awf.registry import names

    head = method.strip().split("(", 1)[0].strip()
    if "+" not in head and head in names("predictor"):
        return f"{VERIFY_GENERATOR}+{method.strip()}"
    return method


def judge_name(method: str) -> str | None:
    """The name by what judges of a method whose generator is the plain one ("vanilla+nli" ->
    "nli"); None for another generator or a unified method."""
    generator, plus, predictor = method.partition("+")
    return predictor if plus and generator == VERIFY_GENERATOR else None
