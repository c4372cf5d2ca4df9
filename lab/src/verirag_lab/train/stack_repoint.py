"""A fitted stack, pointed at the same verifier in another folder (shipping a candidate's stack).

A stack names each predictor feature by its predictor, options and identity digest, and the options
of a candidate verifier hold its folder (`verifier=runs/verifiers/x`). Shipping the candidate copies
its weights into the shipped folder, whose predictor has no options, so the stack fitted on the
candidate no longer loads. Its fitted state is still right: the scores it was fitted on are the same
network's. `repoint` rewrites the verifier source's options and digest, after checking that the
network the stack named (its identity) lies in the new folder (the same saved files, byte for byte),
and records the move in the provenance. Any other difference refuses: refit then.

    python -m verirag_lab.train.stack_repoint STACK --from data/verifier/candidates/x --out stack.json

An option the verifier gained after the stack was fitted changes its identity too (an identity holds
every option, defaults included). `pin_new_options` names such options in the stack's source at the
value that reproduces what the stack was fitted on (`NEUTRAL`: `softmin=0`, the plain minimum),
after checking that the identity without them is the one the stack names:

    python -m verirag_lab.train.stack_repoint STACK --pin-new-options --out stack.json

The stack's other inputs are the model's own signals (token log-probabilities, `llm_judge`), and its
model fingerprint names the llama.cpp build and batch size they were read with, so on another build
`ask` sets the stack aside. `equivalent_model` lists another build's fingerprint of the same GGUF file
as the stack's own, when `benchmarks/stack_engines.py --out` measured the stack on both builds'
features of the same questions and the rule `EQUIVALENCE` holds (the evidence goes in the provenance):

    python -m verirag_lab.train.stack_repoint STACK --equivalent-model FP --evidence SUMMARY.json --out stack.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from verirag.awf.component import identity_digest
from verirag.errors import InputError
from verirag.learned.base import EQUIVALENT
from verirag.learned.shipped import VERIFIER_FILES, shipped_verifier_dir

FEATURE = "verifier"
# options the verifier gained after stacks were fitted, at the value that scores as before them
NEUTRAL: dict[str, Any] = {"softmin": 0.0}


def repoint(stack: dict[str, Any], weights_now_at: str, to: str | None = None) -> dict[str, Any]:
    """The saved stack `stack` (its JSON), its verifier source naming folder `to` (None: the shipped
    verifier) instead of the folder it was fitted with, whose weights now lie at `weights_now_at`."""
    source = (stack.get("settings") or {}).get("sources", {}).get(FEATURE)
    if not source or source.get("predictor") != "verifier":
        raise InputError(f"the stack has no {FEATURE!r} feature made by the trained verifier")
    pins = _fitted_pins(_predictor_with({"verifier": weights_now_at}), source)
    if pins is None:
        raise InputError(
            f"{weights_now_at} is not the verifier the stack was fitted with (identity {source.get('digest')})"
        )
    # the identity holds the adapter's hash, not the calibration beside it: every saved file must match
    here, there = Path(weights_now_at), Path(to) if to else shipped_verifier_dir()
    differ = [f for f in VERIFIER_FILES if (here / f).read_bytes() != (there / f).read_bytes()]
    if differ:
        raise InputError(f"{there} is not the verifier at {here} ({', '.join(differ)} differ): refit the stack")
    named = {k: v for k, v in (source.get("options") or {}).items() if k != "verifier"}
    options = {**({"verifier": to} if to else {}), **named, **pins}
    new = _predictor_with(options)
    out = json.loads(json.dumps(stack))
    moved = out["settings"]["sources"][FEATURE]
    moved["options"], moved["digest"] = options, new.digest
    record = {"from": source.get("options"), "digest_from": source.get("digest"), "model": new.model_fingerprint()}
    provenance = out.get("provenance")
    if isinstance(provenance, dict):
        provenance.setdefault("repointed", []).append(record)
    return out


def pin_new_options(stack: dict[str, Any]) -> dict[str, Any]:
    """The saved stack `stack` (its JSON), its verifier source naming every option of `NEUTRAL` it was
    fitted without, at that option's neutral value; unchanged when it was fitted with them; refused
    unless its identity is today's verifier's under the options it names, with or without those."""
    source = (stack.get("settings") or {}).get("sources", {}).get(FEATURE)
    if not source or source.get("predictor") != "verifier":
        raise InputError(f"the stack has no {FEATURE!r} feature made by the trained verifier")
    options = dict(source.get("options") or {})
    pins = _fitted_pins(_predictor_with(options), source)
    if pins is None:
        raise InputError(
            f"the verifier the stack was fitted with (identity {source.get('digest')}) is not today's "
            f"{options or '(shipped)'}: refit the stack"
        )
    out = json.loads(json.dumps(stack))
    if pins:
        pinned = _predictor_with({**options, **pins})
        moved = out["settings"]["sources"][FEATURE]
        moved["options"], moved["digest"] = {**options, **pins}, pinned.digest
        provenance = out.get("provenance")
        if isinstance(provenance, dict):
            record = {"options": pins, "digest_from": source.get("digest"), "digest": pinned.digest}
            provenance.setdefault("pinned", []).append(record)
    return out


# The stack's AUROC on the other build's features minus on the default's, paired over questions: at
# least this many answers, the interval's lower bound above `low`, the estimate above `estimate`; and
# its verdict at 0.5 differing on at most `verdicts` of the answers both builds wrote alike.
EQUIVALENCE = {"answers": 250, "low": -0.05, "estimate": -0.01, "verdicts": 0.05}


def equivalence_failures(evidence: dict[str, Any]) -> list[str]:
    """What in a `stack_engines.py --out` summary falls short of `EQUIVALENCE` ([]: it holds); a value
    that is missing or not a number falls short."""
    rule, diff = EQUIVALENCE, evidence.get("other-default")
    diff = diff if isinstance(diff, dict) else {}
    answers, low, estimate = _number(evidence.get("answers")), _number(diff.get("low")), _number(diff.get("estimate"))
    alike, differ = _number(evidence.get("alike")), _number(evidence.get("verdict_differs_alike"))
    failed = []
    if not answers >= rule["answers"]:
        failed.append(f"{evidence.get('answers')} answers (at least {rule['answers']})")
    if not low > rule["low"]:
        failed.append(f"the interval's lower bound {_shown(diff.get('low'))} (above {rule['low']})")
    if not estimate > rule["estimate"]:
        failed.append(f"the estimate {_shown(diff.get('estimate'))} (above {rule['estimate']})")
    if not (alike > 0 and differ <= rule["verdicts"] * alike):
        failed.append(
            f"verdicts differ on {evidence.get('verdict_differs_alike')} of {evidence.get('alike')} alike answers"
        )
    return failed


def _number(v: Any) -> float:
    """`v` as a number, NaN (which passes no comparison) when it is not one."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v)


def _shown(v: Any) -> str:
    return f"{v:+.3f}" if isinstance(v, (int, float)) else str(v)


def equivalent_model(stack: dict[str, Any], fingerprint: str, evidence: dict[str, Any]) -> dict[str, Any]:
    """The saved stack `stack` (its JSON) reading `fingerprint` (another build's, of the same model
    file) as its own, refused unless `evidence` holds `EQUIVALENCE`."""
    fingerprints = stack.get("fingerprints") or {}
    own = str(fingerprints.get("model") or "")
    if not own:
        raise InputError("the stack names no model fingerprint: nothing to be equivalent to")
    if fingerprint.split("|", 1)[0] != own.split("|", 1)[0]:
        raise InputError(f"{fingerprint!r} is another model file than the stack's ({own!r}): refit the stack")
    failed = equivalence_failures(evidence)
    if failed:
        raise InputError(f"the evidence does not show the builds equivalent for the stack: {'; '.join(failed)}")
    out = json.loads(json.dumps(stack))
    listed = out["fingerprints"].setdefault(EQUIVALENT, {}).setdefault("model", [])
    if fingerprint != own and fingerprint not in listed:
        listed.append(fingerprint)
    provenance = out.get("provenance")
    if isinstance(provenance, dict):
        provenance.setdefault("equivalences", []).append(
            {"model": fingerprint, "rule": EQUIVALENCE, "evidence": evidence}
        )
    return out


def _predictor_with(options: dict[str, Any]):
    from verirag.awf.compose import build_predictor

    return build_predictor("verifier", None, options=options)


def _fitted_pins(predictor, source: dict[str, Any]) -> dict[str, Any] | None:
    """The options of `NEUTRAL` the stack must name to score as when it was fitted ({}: none, it was
    fitted with today's defaults), or None when `predictor` (its folder aside) is not the verifier the
    stack names under either reading."""
    named = source.get("options") or {}
    identity = predictor.identity()  # its options resolved (defaults included): the folder's replaced
    identity["options"] = {**identity["options"], "verifier": None, **named}
    if identity_digest(identity) == source.get("digest"):
        return {}
    # fitted before an option existed: its identity lacks the option, and the neutral value scores as then
    absent = {k: v for k, v in NEUTRAL.items() if k not in named}
    identity["options"] = {k: v for k, v in identity["options"].items() if k not in absent}
    return absent if absent and identity_digest(identity) == source.get("digest") else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("stack", type=Path)
    p.add_argument("--from", dest="weights", help="where the weights it was fitted with lie now")
    p.add_argument(
        "--pin-new-options",
        action="store_true",
        help="name the options the verifier gained since at their neutral value",
    )
    p.add_argument("--to", default=None, help="the verifier folder it names (default: the shipped verifier)")
    p.add_argument("--equivalent-model", metavar="FP", help="another build's model fingerprint to read as the stack's")
    p.add_argument("--evidence", type=Path, help="benchmarks/stack_engines.py's --out summary for that build")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    if sum((a.weights is not None, a.pin_new_options, a.equivalent_model is not None)) != 1:
        p.error("give one of --from (a move), --pin-new-options, --equivalent-model")
    if (a.equivalent_model is None) != (a.evidence is None):
        p.error("--equivalent-model and --evidence go together")
    try:
        out, shown = _apply(a)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    a.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"{a.out}: {shown}")
    return 0


def _apply(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    stack = json.loads(a.stack.read_text(encoding="utf-8"))
    if a.equivalent_model is not None:
        try:
            evidence = json.loads(a.evidence.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise InputError(f"{a.evidence}: not a stack_engines.py --out summary ({type(e).__name__}: {e})") from None
        if not isinstance(evidence, dict):
            raise InputError(f"{a.evidence}: not a stack_engines.py --out summary (a JSON {type(evidence).__name__})")
        out = equivalent_model(stack, a.equivalent_model, evidence)
        shown = f"model fingerprints {[out['fingerprints']['model'], *out['fingerprints'][EQUIVALENT]['model']]}"
    else:
        out = pin_new_options(stack) if a.pin_new_options else repoint(stack, a.weights, a.to)
        shown = f"verifier {out['settings']['sources'][FEATURE]['options'] or '(shipped)'}"
    return out, shown


if __name__ == "__main__":
    raise SystemExit(main())
