"""What a sweep is given: its windows and criteria (:class:`Settings`) and its loads (``--rates``).

Checked here before any plan or run (:mod:`mpinet.jobs.sweep_plan` plans the work,
:mod:`mpinet.jobs.sweep` runs it); the limits below bound both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpinet.errors import JobError

#: loads one sweep runs at most (a range's n, a list; auto's coarse grid)
MAX_LOADS = 1000
#: bisection steps at most: 2**-40 of a load in (0, 1] is below the 12 digits loads keep
MAX_BISECT = 40
#: steps of one load at most (warmup + measure + drain): the engine's ``max_steps`` bound
MAX_STEPS = 2**31 - 2


@dataclass
class Settings:
    """Windows and saturation criteria of a sweep (steps are engine steps)."""

    warmup: int = 1000
    measure: int = 2000
    drain: int = 1000  # cap on the steps after the window
    tail: int | None = None  # injection after the window (default 10 x zero-load latency)
    accept_tol: float = 0.05
    latency_factor: float = 3.0
    coarse: int = 6  # auto: grid points
    bisect: int = 6  # auto: bisection steps

    def check(self) -> None:
        """Refuse values out of range, and windows longer than a run may be (int32 steps).

        The work they imply (loads x steps x packets) is planned apart
        (:func:`check_plan`).
        """
        for name, lo, hi in (("warmup", 0, MAX_STEPS), ("measure", 1, MAX_STEPS),
                             ("drain", 0, MAX_STEPS), ("coarse", 2, MAX_LOADS),
                             ("bisect", 0, MAX_BISECT)):  # fmt: skip
            v = getattr(self, name)
            if not lo <= v <= hi:
                raise JobError(f"sweep {name} (--{name}) must be in [{lo}, {hi:,}], got {v:,}")
        if self.tail is not None and not 0 <= self.tail <= MAX_STEPS:
            raise JobError(f"sweep tail (--tail) must be in [0, {MAX_STEPS:,}], got {self.tail:,}")
        steps = self.warmup + self.measure + self.drain
        if steps > MAX_STEPS:  # the engine's max_steps
            raise JobError(
                f"sweep warmup + measure + drain = {steps:,} steps, over {MAX_STEPS:,} (the "
                "engine counts steps in int32); way out: shorter windows"
            )
        if not 0.0 < self.accept_tol < 1.0:
            raise JobError(f"sweep accept_tol must be in (0, 1), got {self.accept_tol}")
        if self.latency_factor <= 1.0:
            raise JobError(f"sweep latency_factor must be > 1, got {self.latency_factor}")


@dataclass
class Rates:
    """``list`` (explicit loads), ``range`` (``a:b:n``) or ``auto`` (``a:b:auto``; ``auto``
    alone has ``lo = hi = 0`` until the bound is known)."""

    kind: str
    values: list[float]
    lo: float = 0.0
    hi: float = 0.0


def parse_rates(text: str) -> Rates:
    """``0.05,0.1,0.2`` | ``a:b:n`` | ``a:b:auto`` | ``auto`` (loads in (0, 1]).

    ``auto`` alone searches from 5 % to 120 % of the bound (at most load 1).
    """
    s = str(text).strip()
    usage = f"--rates takes auto, a:b:auto, a range a:b:n or a list 0.05,0.1,0.2; got {text!r}"
    if s.lower() == "auto":
        return Rates("auto", [], 0.0, 0.0)
    parts = s.split(":")
    if ":" in s and len(parts) != 3:
        raise JobError(usage)
    try:
        nums = [float(x) for x in (parts[:2] if ":" in s else s.split(",")) if x.strip()]
        if ":" in s and len(nums) != 2:
            raise ValueError
        count = None if ":" not in s or parts[2].strip().lower() == "auto" else int(parts[2])
    except ValueError:
        raise JobError(usage) from None
    if not nums:
        raise JobError(usage)
    for v in nums:
        _in_range(v)
    if ":" not in s:
        vals = sorted(set(nums))
        if len(vals) > MAX_LOADS:
            raise JobError(f"--rates lists {len(vals):,} loads, over {MAX_LOADS:,} (each is one "
                           "engine run)")  # fmt: skip
        return Rates("list", vals, vals[0], vals[-1])
    lo, hi = nums
    if not lo < hi:
        raise JobError(f"--rates {s}: the first load must be below the second")
    if count is None:
        return Rates("auto", [], lo, hi)
    if not 2 <= count <= MAX_LOADS:  # before linspace: 10**9 points were 8 GB of floats
        raise JobError(
            f"--rates {s}: a range needs n in [2, {MAX_LOADS:,}] loads (each is one engine "
            f"run), got {count:,}"
        )
    return Rates("range", [float(x) for x in np.linspace(lo, hi, count)], lo, hi)


def _in_range(v: float) -> float:
    if not 0.0 < v <= 1.0:
        raise JobError(f"--rates: a load is packets per node per step in (0, 1], got {v}")
    return v
