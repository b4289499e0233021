"""Named retry delays: a `BackoffPolicy` says how waits grow, a `Backoff` walks one retry loop.

A retry loop names its policy once, at module level, with the reason for its
numbers, and asks its own `Backoff` for each pause instead of doubling a
local variable or sleeping a magic number:

    WATCH_RECONNECT = backoff.BackoffPolicy(first_s=0.05, max_s=1.0)
    ...
    delays = WATCH_RECONNECT.start()
    while ...:
        try: ...; delays.reset()
        except ...: await asyncio.sleep(delays.next_delay())

The delay after a failure is `first_s`, then each next one is
`previous * multiplier + step_s`, capped at `max_s` (multiplier 2 doubles;
multiplier 1 with a step grows linearly). Jitter, when asked for, scales each
delay by a factor drawn from [1 - jitter, 1] with an injected random.Random,
so that many clients failing together do not retry together. The class does
no sleeping and reads no clock: a test checks the sequence directly.
"""

from __future__ import annotations

import dataclasses
import random


@dataclasses.dataclass(frozen=True)
class BackoffPolicy:
    first_s: float
    max_s: float
    multiplier: float = 2.0
    step_s: float = 0.0
    #: Fraction of each delay that may be taken off at random (0 = none, at most 1).
    jitter: float = 0.0

    def __post_init__(self) -> None:
        if self.first_s < 0 or self.max_s < self.first_s:
            raise ValueError(f"backoff needs 0 <= first_s <= max_s, got {self}")
        if self.multiplier < 1 or self.step_s < 0:
            raise ValueError(f"backoff delays must not shrink, got {self}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"backoff jitter must lie in [0, 1], got {self.jitter}")

    def start(self, rng: random.Random | None = None) -> Backoff:
        """A fresh sequence of delays for one retry loop."""
        return Backoff(self, rng=rng)


class Backoff:
    """The delays of one retry loop under a policy; reset after a success."""

    def __init__(self, policy: BackoffPolicy, *, rng: random.Random | None = None) -> None:
        self.policy = policy
        self._rng = rng if rng is not None or policy.jitter == 0 else random.Random()
        self._next_s = policy.first_s
        self.attempts = 0

    def next_delay(self) -> float:
        """The pause before the next attempt, in seconds; each call moves the sequence on."""
        policy = self.policy
        delay = self._next_s
        self._next_s = min(delay * policy.multiplier + policy.step_s, policy.max_s)
        self.attempts += 1
        if self._rng is not None and policy.jitter:
            delay *= 1 - policy.jitter * self._rng.random()
        return delay

    def reset(self) -> None:
        """Start again from first_s (after an attempt that succeeded)."""
        self._next_s = self.policy.first_s
        self.attempts = 0
