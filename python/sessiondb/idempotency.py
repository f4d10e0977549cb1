"""Idempotency keys and safe resends of writes (docs/protocol.md §7.1): every write carries a key,
the caller's ``idempotency_key=`` or ``auto-<time>-<uuid4>`` of the client's own, the same across its
resends; a keyed write whose fate is unknown (a lost connection, a daemon restart or none
answering yet, OUTCOME_UNKNOWN from the daemon, the daemon's goodbye) is sent again until the
call's deadline, since the daemon applies a key at most once."""
from __future__ import annotations

import random
import time
import uuid
from typing import Optional

from .errors import InvalidArgumentError, OutcomeUnknownError, SessionDBError
from .protocol_description import LIMITS

MAX_KEY_LENGTH = LIMITS["idempotencyKeyMaxLength"]
# The pause between two sends of a keyed write grows from the first to the last, with jitter.
FIRST_PAUSE_S = 0.02
LAST_PAUSE_S = 0.5
# Codes after which a keyed write is sent again: it may or may not have been applied, or no
# daemon took it yet.
RESENT_CODES = frozenset({"OUTCOME_UNKNOWN", "UNAVAILABLE"})


# An automatic key's time: milliseconds since the epoch in base 36, zero-padded to this width, so
# keys sort by time as strings and a commit adds its keys at the end of the keys table's index.
KEY_TIME_DIGITS = 9
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def key_time(ms: int) -> str:
    """``ms`` as a key's time, as the TypeScript client writes it: base 36, zero-padded."""
    digits = ""
    while ms > 0:
        ms, d = divmod(ms, 36)
        digits = _BASE36[d] + digits
    return digits.rjust(KEY_TIME_DIGITS, "0")


def write_key(key: Optional[str]) -> str:
    """The key a write goes with: the caller's, checked as the daemon checks it, or a new one
    (``auto-<time>-<uuid4>``: made at <time>, see key_time)."""
    if key is None:
        return f"auto-{key_time(time.time_ns() // 1_000_000)}-{uuid.uuid4()}"
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise InvalidArgumentError(
            "INVALID_ARGUMENT", f"idempotency_key must be a str of 1 to {MAX_KEY_LENGTH} characters, got {key!r}")
    return key


class Resends:
    """The resend rule of one keyed write: ``again(err)`` gives the pause before sending it again,
    or raises what the caller gets (an error not worth a resend, or the deadline passed)."""

    def __init__(self, op: str, deadline: float) -> None:
        self._op = op
        self._deadline = deadline
        self._pause = FIRST_PAUSE_S
        self.sent = False

    def again(self, err: BaseException) -> float:
        code = getattr(err, "code", None)
        if isinstance(err, SessionDBError) and code not in RESENT_CODES:
            raise err
        left = self._deadline - time.monotonic()
        if left <= 0:
            if self.sent:
                raise OutcomeUnknownError(
                    "OUTCOME_UNKNOWN",
                    f"{self._op} was sent with its idempotency key until its deadline and no answer told "
                    "whether it was applied; sending it again with the same key applies it at most once",
                ) from None
            raise err
        pause = min(left, random.uniform(self._pause / 2, self._pause))
        self._pause = min(LAST_PAUSE_S, self._pause * 2)
        return pause
