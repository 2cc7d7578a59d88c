"""The keys of the input-queued router (``model.router = "iq"``, ``[model.iq]``): names,
defaults and valid ranges, once, for the job schema (:mod:`mpinet.jobs.spec`), the BookSim
mapping (:mod:`mpinet.jobs.booksim_map`) and the engine (docs/iq-router.md).

The names and defaults are BookSim2's (``src/booksim_config.cpp``); ``channel_latency`` is
the cycles of a router-to-router channel, which BookSim sets per topology (``use_noc_latency
= 1``: 1 on a mesh, 2 on a torus; injection and ejection channels always 1).

Plain data, outside ``engine/flit/`` (whose package loads numba's cache guard): the job
schema imports it, and ``mpinet --help`` imports no numba (docs/performance.md, "mpinet
booksim meshconfig, end to end", session 13).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from mpinet.errors import JobError

#: the router models of the flit engine
ROUTERS = ("ideal", "iq")
#: the allocators modeled (BookSim's names); ``max_size`` is refused by name
ALLOCATORS = ("separable_input_first", "separable_output_first", "islip")

#: integer keys: (default, lowest, highest, what)
INT_KEYS: dict[str, tuple[int, int, int, str]] = {
    "routing_delay": (1, 0, 64, "cycles of route computation (0: lookahead routing)"),
    "vc_alloc_delay": (1, 1, 64, "cycles of VC allocation"),
    "sw_alloc_delay": (1, 1, 64, "cycles of switch allocation"),
    "speculative": (0, 0, 1, "1: switch allocation speculates on VC allocation"),
    "st_prepare_delay": (0, 0, 64, "cycles of switch traversal, first part"),
    "st_final_delay": (1, 0, 64, "cycles of switch traversal, second part"),
    "credit_delay": (0, 0, 64, "cycles a router takes to process a credit"),
    "input_speedup": (1, 1, 16, "crossbar inputs per input port"),
    "output_speedup": (1, 1, 16, "crossbar outputs per output port"),
    "alloc_iters": (1, 1, 16, "iSLIP iterations"),
    "wait_for_tail_credit": (0, 0, 1, "1: a VC is reallocated only after its tail's credit"),
    "channel_latency": (1, 1, 64, "cycles of a router-to-router channel (BookSim: mesh 1, "
                        "torus 2)"),
}  # fmt: skip
#: string keys: (default, what)
STR_KEYS: dict[str, tuple[str, str]] = {
    "vc_allocator": ("islip", " | ".join(ALLOCATORS)),
    "sw_allocator": ("islip", " | ".join(ALLOCATORS)),
}
#: float keys: (default, lowest, highest, what)
FLOAT_KEYS: dict[str, tuple[float, float, float, str]] = {
    "internal_speedup": (1.0, 1.0, 16.0, "router steps per cycle (fractions accumulate)"),
}


@dataclass(frozen=True)
class IQConfig:
    """The iq router's keys (see :data:`INT_KEYS`, :data:`STR_KEYS`, :data:`FLOAT_KEYS`)."""

    routing_delay: int = 1
    vc_alloc_delay: int = 1
    sw_alloc_delay: int = 1
    speculative: int = 0
    st_prepare_delay: int = 0
    st_final_delay: int = 1
    credit_delay: int = 0
    input_speedup: int = 1
    output_speedup: int = 1
    alloc_iters: int = 1
    wait_for_tail_credit: int = 0
    channel_latency: int = 1
    vc_allocator: str = "islip"
    sw_allocator: str = "islip"
    internal_speedup: float = 1.0

    @property
    def crossbar_delay(self) -> int:
        return self.st_prepare_delay + self.st_final_delay

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def defaults() -> dict[str, Any]:
    """Every key with its default."""
    return IQConfig().as_dict()


def check_iq(where: str, value: Any) -> dict[str, Any]:
    """``[model.iq]``: a table of the keys above, each in its range; defaults filled.

    Raises
    ------
    JobError
        ``job.toml: model.iq.vc_alloc_delay must be an integer in [1, 64], got 0``.
    """
    if value is None:
        return defaults()
    if not isinstance(value, dict):
        raise JobError(f"{where} must be a table of the iq router's keys, got {value!r}")
    out = defaults()
    for k, v in value.items():
        key = f"{where}.{k}"
        if k in INT_KEYS:
            _, lo, hi, _ = INT_KEYS[k]
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise JobError(f"{key} must be an integer in [{lo}, {hi}], got {v!r}")
        elif k in FLOAT_KEYS:
            _, lo, hi, _ = FLOAT_KEYS[k]
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi
            if not ok:
                raise JobError(f"{key} must be a number in [{lo:g}, {hi:g}], got {v!r}")
            v = float(v)
        elif k in STR_KEYS:
            if v == "max_size":
                raise JobError(f"{key} = 'max_size' (BookSim's maximum-size matching) is not "
                              f"modeled; use one of {', '.join(ALLOCATORS)}")  # fmt: skip
            if v not in ALLOCATORS:
                raise JobError(f"{key} must be one of {', '.join(ALLOCATORS)}, got {v!r}")
        else:
            valid = ", ".join([*INT_KEYS, *STR_KEYS, *FLOAT_KEYS])
            raise JobError(f"{where}: unknown key {k!r}; valid keys: {valid}")
        out[k] = v
    if out["st_prepare_delay"] + out["st_final_delay"] < 1:
        raise JobError(f"{where}: st_prepare_delay + st_final_delay must be at least 1 (the "
                      "crossbar takes a cycle), got 0")  # fmt: skip
    return out


def check_router(where: str, value: Any) -> str:
    """``model.router``: ideal or iq."""
    if value not in ROUTERS:
        raise JobError(f"{where} must be one of {', '.join(ROUTERS)}, got {value!r}")
    return value
