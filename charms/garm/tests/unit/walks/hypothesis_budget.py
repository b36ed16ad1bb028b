"""A time bound on hypothesis's shrinking, so a failure of the state machine is reported fast.

Hypothesis shrinks a failing example for up to five minutes (its engine's
`MAX_SHRINKING_SECONDS`, which no setting exposes). A failure of the scale-set state machine
then took about six minutes to report; bounded, it reports the smallest example found within
the bound (still a few dozen steps at most, with `stateful_step_count`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# The default run's bound; the thorough profile keeps hypothesis's own five minutes.
SHRINK_SECONDS = 30


@contextmanager
def shrinking_bounded(seconds: float) -> Iterator[None]:
    """Stop shrinking a failure after `seconds` of shrinking, within this block."""
    from hypothesis.internal.conjecture import engine  # noqa: PLC0415 - private, patched here only

    saved = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = seconds  # pyright: ignore[reportAttributeAccessIssue]
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = saved
