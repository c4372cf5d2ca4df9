"""Token logprobs in the two layouts servers send: chat (content[]) and legacy completions."""

from __future__ import annotations

import math
from typing import Any

from verirag.types import TokenLogprob


def _float(value: Any) -> float:
    """A logprob from JSON; None (no conditional probability) becomes nan."""
    if value is None:
        return math.nan
    return float(value)


def _sorted_top(pairs) -> list[tuple[str, float]]:
    """Alternatives, most likely first (servers may append the chosen token out of order)."""
    return sorted(pairs, key=lambda kv: -kv[1] if not math.isnan(kv[1]) else math.inf)


def parse_chat_logprobs(choice: dict[str, Any], top_n: int) -> list[TokenLogprob] | None:
    """choices[i].logprobs.content[j].{token, logprob, top_logprobs[{token, logprob}]} -> tokens.

    Returns None when the choice carries no logprobs at all.
    """
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return None
    content = lp.get("content")
    if content is None:
        # Some servers answer chat requests in the legacy layout.
        if "tokens" in lp:
            return parse_legacy_logprobs(lp, top_n)
        return None
    tokens = []
    for item in content:
        top = _sorted_top(
            (str(t.get("token", "")), _float(t.get("logprob")))
            for t in (item.get("top_logprobs") or [])
            if isinstance(t, dict)
        )
        tokens.append(
            TokenLogprob(token=str(item.get("token", "")), logprob=_float(item.get("logprob")), top=top[:top_n])
        )
    return tokens


def parse_legacy_logprobs(lp: dict[str, Any] | None, top_n: int) -> list[TokenLogprob] | None:
    """The completions layout: {tokens[], token_logprobs[], top_logprobs[{token: logprob}]}."""
    if not isinstance(lp, dict) or (not lp.get("tokens") and not lp.get("token_logprobs")):
        return None
    toks = lp.get("tokens") or []
    lps = lp.get("token_logprobs") or []
    tops = lp.get("top_logprobs") or []
    out = []
    for i, tok in enumerate(toks):
        top_d = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
        top = _sorted_top((str(t), _float(v)) for t, v in top_d.items())
        out.append(TokenLogprob(token=str(tok), logprob=_float(lps[i] if i < len(lps) else None), top=top[:top_n]))
    return out
