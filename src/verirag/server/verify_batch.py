"""POST /v1/verify/batch without HTTP: many verify requests in, one VerifyResult each out, in order.

Each request is checked on its own as /v1/verify checks it (the VerifyRequest schema, the method
name, the service's passage limit); one that fails gets a result with score None and the reason in
`error` in its place (with its field paths, e.g. "requests.3.answer: ..."), so a bad answer never
holds back or hides its neighbours. The valid requests are grouped by method and each group is
verified in one batched pass (`Pipeline.verify_many`: the trained verifier reads the sentence-chunk
pairs of all the group's answers together), the results put back in request order.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from verirag.awf.verify_batch import VerifyItem
from verirag.contexts import to_passages
from verirag.errors import InputError, VeriragError
from verirag.server.schemas import VerifyRequest
from verirag.types import Passage, VerifyResult


def checked(raw: list[dict[str, Any]], service) -> list[VerifyRequest | str]:
    """Each raw request as a VerifyRequest, or why it is invalid (field paths from `requests`)."""
    out: list[VerifyRequest | str] = []
    for i, r in enumerate(raw):
        try:
            req = VerifyRequest.model_validate(r)
            service.check_method(req.method)
            service.check_passages(len(req.passages))
            passages_of(req)  # duplicate ids: refused here, as /v1/verify refuses them
        except ValidationError as e:
            where = "; ".join(
                f"requests.{i}.{'.'.join(str(p) for p in x['loc'] if not _union_member(p))}: {x['msg']}"
                for x in e.errors()[:5]
            )
            out.append(f"invalid request: {where}")
            continue
        except InputError as e:
            out.append(f"requests.{i}: {e}")
            continue
        out.append(req)
    return out


def _union_member(p) -> bool:
    # pydantic names the members of a union (a model's class name, "function-after[...]"): not the client's field
    return isinstance(p, str) and (p[:1].isupper() or "[" in p)


def passages_of(req: VerifyRequest) -> list[Passage]:
    """A request's passages by the one input contract (`verirag.contexts`): a plain string is
    passage p0, p1, ... by place, an object keeps its id."""
    return to_passages([p if isinstance(p, str) else p.model_dump() for p in req.passages], name="passages")


def failed(req: VerifyRequest | None, error: str, method: str) -> VerifyResult:
    """The result of a request that could not be verified: score None, not supported, the reason.
    An invalid request's text is not echoed (it may be what made it invalid, e.g. 100,000 characters)."""
    return VerifyResult(
        question=req.question if req is not None else "",
        answer=req.answer if req is not None else "",
        score=None,
        faithful=False,
        threshold=None,
        evidence=[],
        supporting_passage=None,
        method=(req.method if req is not None and req.method else method),
        judge="",
        timings={},
        error=error,
    )


def verify_requests(service, token, requests: list[VerifyRequest | str], history_of) -> list[VerifyResult]:
    """Results of `checked` requests, in order (module doc); `history_of(req)` is the request's
    history as the library takes it. An outage raises (the whole request is a 502, as /v1/verify)."""
    out: list[VerifyResult | None] = [None] * len(requests)
    groups: dict[str, list[int]] = {}
    for i, req in enumerate(requests):
        if isinstance(req, str):
            out[i] = failed(None, req, service.verify_method)
        else:
            groups.setdefault(req.method or service.verify_method, []).append(i)
    for method, idx in groups.items():
        token.check()
        items = [
            VerifyItem(r.question, r.answer, passages_of(r), history_of(r), r.threshold)
            for r in (requests[i] for i in idx)
        ]
        try:
            results = service.pipeline_for(method).verify_many(items, on_stage=lambda _stage: token.check())
        except InputError as e:  # the method cannot verify a given answer: each of its requests says so
            results = [e] * len(idx)
        for i, r in zip(idx, results):
            out[i] = failed(requests[i], str(r), method) if isinstance(r, VeriragError) else r
    return out  # type: ignore[return-value]  # every place is filled
