"""A router that follows fixed words of ports at fixed steps (emulation schedules).

Header ``(word, base)``: the packet's ``i``-th hop is port ``words[word, i]``,
taken at step ``base + slots[word, i]`` (it waits before; a late packet still
goes as soon as it can). The workload sets the header at injection
(``workload.headers``); the table is the same on every node and rank.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mpinet.errors import RoutingError
from mpinet.routing.base import WAIT, HopContext, Router
from mpinet.topology.base import Topology


class WordScheduleRouter(Router):
    """Follow ``words[w]`` (ports, -1 padded) at steps ``base + slots[w]``."""

    name: ClassVar[str] = "word-schedule"
    summary: ClassVar[str] = "follows a fixed word of ports at fixed steps (emulations)"
    distributed: ClassVar[bool] = False
    holds: ClassVar[bool] = True
    header_width = 2

    def __init__(
        self, topo: Topology, words: np.ndarray, slots: np.ndarray, name: str = "", **opts: Any
    ) -> None:
        super().__init__(topo, **opts)
        words, slots = np.asarray(words, np.int64), np.asarray(slots, np.int64)
        if words.shape != slots.shape or words.ndim != 2:
            raise RoutingError("words and slots must be two arrays of the same (W, L) shape")
        if words.max(initial=-1) >= topo.degree:
            raise RoutingError(f"a word uses a port outside 0..{topo.degree - 1}")
        self.words, self.slots = words, slots
        self.length = (words >= 0).sum(axis=1)
        if name:
            self.name = name

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        raise RoutingError(f"router {self.name} needs a workload that sets its headers")

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        w, i = headers[:, 0], ctx.hops
        over = i >= self.length[w]  # ran out of word: the destination was wrong
        i = np.where(over, 0, i)
        port = np.where(headers[:, 1] + self.slots[w, i] <= ctx.step, self.words[w, i], WAIT)
        return np.where(over, -2, port), headers

    def ready_steps(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> np.ndarray:
        """``base + slots[word, hop]``: the step of the packet's next letter."""
        w = headers[:, 0]
        i = np.minimum(ctx.hops, self.slots.shape[1] - 1)
        return headers[:, 1] + self.slots[w, i]
