"""The one default: the method that answers and verifies when the user names none.

Every entry point reads it from here: `Pipeline` and `Verifier` in Python, `verirag ask`,
`verirag verify`, `/v1/ask`, `/v1/verify`, the web page and both framework integrations; each
reports the method it used (`method` in every JSON result).

It is the trained verifier shipped in the package (`verirag.learned.shipped`): it judges an
answer in about 0.1 s with no LLM call, so verifying never loads a generator. On the default
model's own answers it ranks as well as per-passage NLI (AUROC 0.713 vs 0.733, paired -0.020
[-0.129, 0.088]) and far better than the in-context self-check (0.518); on other LLMs' answers
(the dev set) NLI leads, most of it on conversational follow-ups (-0.094 [-0.214, 0.018] overall),
at 30-180x its cost. `vanilla+nli` is one option away (`method="vanilla+nli"`, `--method`,
`--judge`).
"""

from __future__ import annotations

DEFAULT_METHOD = "vanilla+verifier"
# The method that uses an entailment judge: what `--judge` selects when no method is named, and
# what error messages suggest to a user whose method cannot verify a given answer.
JUDGED_METHOD = "vanilla+nli"
