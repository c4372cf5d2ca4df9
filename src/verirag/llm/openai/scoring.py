"""score() over HTTP, from the server's echo of the prompt's own token logprobs.

POST completions with echo=true, logprobs=1 and max_tokens=1 (not 0, which llama-cpp-python reads as
"unlimited"); the continuation's logprobs are read over its character span of the echo and the
generated token is ignored. Needs a string prompt, or a `chat_template` (Jinja) to render chat prompts.
"""

from __future__ import annotations

import math
from typing import Any

from verirag.errors import CapabilityError, InputError
from verirag.llm.base import GenerateOptions
from verirag.llm.chat_template import plain_messages, render_chat, validate_messages
from verirag.llm.openai.client import BackendHTTPError, OpenAIClient, first_choice, request_body
from verirag.llm.openai.logprobs import parse_legacy_logprobs
from verirag.types import ContinuationScore, Prompt, TokenLogprob


class EchoScorer:
    """Scores continuations on one server and model; finds out once whether its echo is aligned."""

    def __init__(
        self,
        client: OpenAIClient,
        model: str,
        chat_template: str | None = None,
        extra_body: dict[str, Any] | None = None,
    ):
        self.client = client
        self.model = model
        self.chat_template = chat_template
        self.extra_body = dict(extra_body or {})
        self.aligned: bool | None = None  # None: not probed yet (see probe_alignment)

    def _where(self) -> str:
        return f"{self.client.base_url} ({self.model})"

    def prompt_text(self, prompt: Prompt) -> str:
        validate_messages(prompt)
        if isinstance(prompt, str):
            return prompt
        if not self.chat_template:
            raise CapabilityError(
                "the openai backend scores a continuation through /completions, which needs the "
                "prompt as text: pass a string prompt, or give OpenAICompatibleLLM a chat_template "
                "(the model's Jinja chat template) to render chat prompts"
            )
        return render_chat(self.chat_template, plain_messages(prompt))

    def _completion(self, text: str, shown: str, **extra: Any) -> dict[str, Any]:
        """The first choice of a one-token greedy completion of `text`."""
        one_token = GenerateOptions(max_tokens=1, logprobs=True, top_logprobs=1)
        body = request_body(self.model, text, one_token, extra={**extra, **self.extra_body})
        return first_choice(self.client.request("POST", "completions", body), shown)

    def _echo(self, text: str, shown: str) -> dict[str, Any]:
        # max_tokens=1, not 0: llama-cpp-python reads max_tokens <= 0 as "unlimited" and would
        # generate up to the context size; the one generated token is ignored.
        try:
            return self._completion(text, shown, echo=True)
        except BackendHTTPError as exc:
            if 400 <= exc.status_code < 500:
                raise CapabilityError(
                    f"{self._where()} cannot score a fixed continuation: it rejected "
                    f"an echo request for prompt logprobs ({exc})"
                ) from exc
            raise

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        """log P(continuation | prompt) from the server's echoed prompt logprobs.

        The continuation's tokens are found from the end of the echo (the echoed token strings
        end with continuation + the one generated token), which stays right when a server drops
        special tokens from the echoed strings; a token that straddles the prompt/continuation
        boundary (BPE merged across it) counts as a continuation token. Servers whose token
        strings do not spell the text (byte tokens) are aligned by their `text_offset`.
        """
        if not continuation:
            raise InputError("score() needs a non-empty continuation")
        prompt_text = self.prompt_text(prompt)
        if not prompt_text:
            raise InputError("score() needs a non-empty prompt: the first token has no conditional probability")
        choice = self._echo(prompt_text + continuation, f"POST {self.client.base_url}/completions")
        picked, status = locate_continuation(choice, prompt_text, continuation)
        if status == "unknown":  # nothing was generated (EOS): ask the one-time probe
            status = "ok" if self.probe_alignment() else "shifted"
        if status == "shifted":
            raise CapabilityError(
                f"{self._where()} returns echoed prompt logprobs shifted by one "
                "position (a llama-cpp-python server bug for prompts that do not start with a BOS "
                "token), so it cannot score a fixed continuation correctly; render prompts that "
                "start with BOS (a chat_template), or use the llama_cpp or hf backend"
            )
        if status != "ok" or not picked or any(math.isnan(t.logprob) for t in picked):
            raise CapabilityError(
                f"{self._where()} does not return prompt logprobs with echo=true "
                f"({status}), so it cannot score a fixed continuation (llama-cpp-python's server "
                "needs --logits_all true; vLLM supports echo; OpenAI chat models do not)"
            )
        return ContinuationScore(tokens=[TokenLogprob(token=t.token, logprob=t.logprob) for t in picked])

    def probe_alignment(self) -> bool:
        """Once per instance: does this server align echoed logprobs correctly?

        Scores a probe; if nothing is generated there either, compares the echoed distribution
        at the probe's last token with the next-token distribution after the whole probe: if
        they are the same, the server shifted them by one.
        """
        if self.aligned is None:
            probe, last_word = "The capital of France is", " is"
            picked, status = locate_continuation(self._echo(probe, "echo probe"), probe[: -len(last_word)], last_word)
            if status in ("ok", "shifted"):
                self.aligned = status == "ok"
            elif status != "unknown" or not picked:
                self.aligned = True  # nothing to compare: assume the API contract holds
            else:
                nxt = parse_legacy_logprobs(self._completion(probe, "probe").get("logprobs"), 1)
                last = picked[-1]
                if not nxt or not nxt[0].top:
                    self.aligned = True
                else:
                    top_tok, top_lp = nxt[0].top[0]
                    self.aligned = not (
                        last.token != top_tok
                        and any(tok == top_tok and abs(lp - top_lp) < 1e-3 for tok, lp in last.top)
                    )
        return self.aligned


def locate_continuation(
    choice: dict[str, Any],
    prompt_text: str,
    continuation: str,
) -> tuple[list[TokenLogprob], str]:
    """The echoed tokens that spell `continuation`, and a status:
    "ok"; "shifted" (the generated token has no logprob: the off-by-one server bug);
    "unknown" (nothing generated, alignment cannot be told from this reply);
    or a reason why the echo is unusable."""
    lp = choice.get("logprobs")
    tokens = parse_legacy_logprobs(lp, 1)
    if not tokens:
        return [], "no logprobs in the reply"
    full = prompt_text + continuation
    text = choice.get("text")
    if not isinstance(text, str) or not text.startswith(full):
        return [], "the reply does not echo the prompt"
    generated = text[len(full) :]
    strings = [t.token for t in tokens]
    ends, pos = [], 0
    for tok in strings:
        pos += len(tok)
        ends.append(pos)
    joined = "".join(strings)
    if joined.endswith(continuation + generated):
        c_end = len(joined) - len(generated)
        c_start = c_end - len(continuation)
        picked = [t for t, e in zip(tokens, ends) if e > c_start and e - len(t.token) < c_end]
        return picked, ("ok" if generated else "unknown")
    if generated and joined.endswith(continuation):
        return [], "shifted"
    # Token strings that do not spell the text (e.g. "bytes:" tokens): use text_offset.
    offsets = lp.get("text_offset") if isinstance(lp, dict) else None
    if isinstance(offsets, list) and len(offsets) == len(tokens):
        start, end = len(prompt_text), len(full)
        offs = [int(o) for o in offsets]
        picked = []
        for i, (t, off) in enumerate(zip(tokens, offs)):
            if off >= end:
                return picked, "ok"
            # a token spans up to the next one's offset (its string may be "bytes:\xc3")
            tok_end = offs[i + 1] if i + 1 < len(offs) else off + max(1, len(t.token))
            if off >= start or tok_end > start:
                picked.append(t)
        return picked, ("shifted" if generated else "unknown")
    return [], "the echoed tokens cannot be aligned with the text"
