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
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from verirag.awf.component import identity_digest
from verirag.errors import InputError
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
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    if (a.weights is None) == (not a.pin_new_options):
        p.error("give --from (a move) or --pin-new-options")
    stack = json.loads(a.stack.read_text(encoding="utf-8"))
    out = pin_new_options(stack) if a.pin_new_options else repoint(stack, a.weights, a.to)
    a.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"{a.out}: verifier {out['settings']['sources'][FEATURE]['options'] or '(shipped)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
