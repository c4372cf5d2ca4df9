"""The one default: the method that answers and verifies when the user names none.

Every entry point reads it from here, through the answer spec's one `resolve()`
(`verirag.awf.answer_spec`): `Pipeline` and `Verifier` in Python, `verirag ask`, `verirag verify`,
`/v1/ask`, `/v1/verify`, the web page and both framework integrations; each reports the method it
used (`method` in every JSON result).

It is the trained verifier shipped in the package (`verirag.learned.shipped`): it judges an
answer in about 0.1 s with no LLM call, so verifying never loads a generator. On the default
model's own answers it is not shown below per-passage NLI (AUROC 0.692 vs 0.733, paired -0.041
[-0.144, 0.066]); on other LLMs' answers (the dev set) NLI leads, most of it on conversational
follow-ups (-0.046 [-0.157, 0.071] overall), and on claims about a kind of document it never
trained on the verifier leads (+0.142 [0.039, 0.240]), at about 1/200 of NLI's cost
(docs/results/cascade.md). `vanilla+nli` is one option away (`method="vanilla+nli"`, `--method`,
`--judge`).
"""

from __future__ import annotations

DEFAULT_METHOD = "vanilla+verifier"
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
