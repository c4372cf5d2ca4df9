"""Limits on what one call may ask the library to read, checked before any model runs.

They bound the cost of one item, so that a bad item of a batch (a log line, a request of
/v1/verify/batch) is refused in milliseconds instead of holding the batch for minutes: an answer
of 100,000 characters is about 1,000 sentences, each a claim the verifier reads against the passages.
"""

from __future__ import annotations

# Characters of an answer to verify (the service's limit of a question's or an answer's text).
MAX_ANSWER_CHARS = 20_000
# Characters of one passage an answer is verified against (about 8,000 words): every door refuses a
# longer one (`verirag.contexts`); a longer document is split into passages first (`verirag index`).
MAX_PASSAGE_CHARS = 50_000
