"""A fitted stack, pointed at the same verifier in another folder (shipping a candidate's stack).

A stack names each predictor feature by its predictor, options and identity digest, and the options
of a candidate verifier hold its folder (`verifier=runs/verifiers/x`). Shipping the candidate copies
its weights into the shipped folder, whose predictor has no options, so the stack fitted on the
candidate no longer loads. Its fitted state is still right: the scores it was fitted on are the same
network's. `repoint` rewrites the verifier source's options and digest, after checking that the
network the stack named (its identity) lies in the new folder (the same saved files, byte for byte),
and records the move in the provenance. Any other difference refuses: refit then.

    python -m verirag_lab.train.stack_repoint STACK --from data/verifier/candidates/x --out stack.json
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


def _predictor(folder: str | None):
    from verirag.awf.compose import build_predictor

    return build_predictor("verifier", None, options={"verifier": folder} if folder else {})


def repoint(stack: dict[str, Any], weights_now_at: str, to: str | None = None) -> dict[str, Any]:
    """The saved stack `stack` (its JSON), its verifier source naming folder `to` (None: the shipped
    verifier) instead of the folder it was fitted with, whose weights now lie at `weights_now_at`."""
    source = (stack.get("settings") or {}).get("sources", {}).get(FEATURE)
    if not source or source.get("predictor") != "verifier":
        raise InputError(f"the stack has no {FEATURE!r} feature made by the trained verifier")
    was = _predictor(weights_now_at)
    if _fitted_identity(was, source) != source.get("digest"):
        raise InputError(
            f"{weights_now_at} is not the verifier the stack was fitted with (identity {source.get('digest')})"
        )
    # the identity holds the adapter's hash, not the calibration beside it: every saved file must match
    here, there = Path(weights_now_at), Path(to) if to else shipped_verifier_dir()
    differ = [f for f in VERIFIER_FILES if (here / f).read_bytes() != (there / f).read_bytes()]
    if differ:
        raise InputError(f"{there} is not the verifier at {here} ({', '.join(differ)} differ): refit the stack")
    new = _predictor(to)
    out = json.loads(json.dumps(stack))
    moved = out["settings"]["sources"][FEATURE]
    moved["options"], moved["digest"] = ({"verifier": to} if to else {}), new.digest
    record = {"from": source.get("options"), "digest_from": source.get("digest"), "model": new.model_fingerprint()}
    provenance = out.get("provenance")
    if isinstance(provenance, dict):
        provenance.setdefault("repointed", []).append(record)
    return out


def _fitted_identity(predictor, source: dict[str, Any]) -> str:
    """The digest `predictor` would have had under the options the stack was fitted with."""
    identity = predictor.identity()  # its options resolved (defaults included): the folder's replaced
    identity["options"] = {**identity["options"], "verifier": None, **(source.get("options") or {})}
    return identity_digest(identity)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("stack", type=Path)
    p.add_argument("--from", dest="weights", required=True, help="where the weights it was fitted with lie now")
    p.add_argument("--to", default=None, help="the verifier folder it names (default: the shipped verifier)")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    out = repoint(json.loads(a.stack.read_text(encoding="utf-8")), a.weights, a.to)
    a.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"{a.out}: verifier {out['settings']['sources'][FEATURE]['options'] or '(shipped)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
