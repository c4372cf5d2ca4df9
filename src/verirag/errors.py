"""Errors a user can cause and fix. The CLI prints their message without a traceback."""

from __future__ import annotations


class VeriragError(Exception):
    """Base class: a request that cannot be served, with a message that says why and what to do."""

    exit_code = 1


class InputError(VeriragError):
    """Bad user input: empty question, empty corpus, unreadable file, bad option."""

    exit_code = 2


class AuthError(InputError):
    """A service refused the credentials (HTTP 401 or 403): the API key is missing or wrong. The
    caller's to fix, so an InputError, never an outage."""


class ModelNotFoundError(VeriragError):
    """A model preset or path that cannot be resolved to a file on disk."""

    exit_code = 3


class ChecksumError(VeriragError):
    """A model file whose sha256 differs from the one expected."""

    exit_code = 3


class CapabilityError(VeriragError):
    """A backend asked for something it cannot give (e.g. logprobs from an endpoint without them)."""

    exit_code = 4


class BackendError(VeriragError):
    """An LLM backend failed to answer (unreachable, HTTP error, empty or malformed response).

    An outage, never a verdict: wherever it happens on the answer path (the generator, the
    verifier, a fallback), `ask` exits with it, the service answers 502, and an experiment record
    counts it as an error. Parts that record a failure carry the exception itself (`failure`), so
    this is decided by type, never by a name in a string."""

    exit_code = 5


def is_outage(failure: BaseException | None) -> bool:
    """Whether a recorded failure is an outage of a backend (see BackendError)."""
    return isinstance(failure, BackendError)


class NotFittedError(VeriragError):
    """A learned part (threshold, trust filter, classifier, forecaster) used before it was fitted
    or loaded; the message names what fits it."""

    exit_code = 2
