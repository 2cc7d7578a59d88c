"""Rows of routes walked at injection, for routers no table can hold (random choices,
no translations): :class:`SourceRouted`.

A packet's route is walked once (:func:`~mpinet.routing.source_routes.walk_routes`)
into rows of a table ``width`` cells wide, chained when it is longer than a row
(:data:`~mpinet.routing.source_routes.PORT_NEXT`, ``links``), and read one cell a hop
by the compiled rule or :meth:`SourceRouted.next_port`. Rows are reused: a stack of
free rows, freed on a route's last hop or by the engine when the packet is delivered.
A word names a row of the rank that walked it: a packet that crosses to another rank
gets a row there (its route walked again, :meth:`SourceRouted.rewalk`, or carried in the
flit engine's messages and written into free rows, :mod:`mpinet.engine.flit.route_carry`),
and the sending rank frees its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.errors import RoutingError
from mpinet.routing.base import DROP, CompiledHop, HopContext, Router
from mpinet.routing.source_routes import (
    MAX_HOPS,
    PORT_DROP,
    PORT_END,
    PORT_NEXT,
    source_headers,
    source_rule,
    walk_routes,
)
from mpinet.routing.walk import default_max_hops


class SourceRouted(Router):
    """``router`` with its routes computed at injection and read from rows.

    A packet's first call (header -1, set by :meth:`init_headers`) walks its route
    (with its pid, the run's seed and step) into free rows, or the engine walks a
    batch at injection (:meth:`walk_rows`); every hop then reads one cell
    (:func:`~mpinet.routing.source_routes.source_hop_one`). The engine sees the
    router's own ports, so a run gives the router's own results (tested on both
    engines). A row holds ``width - 1`` hops and one more cell: the end, or the
    link to the row the route goes on in; so the word a packet carries after its
    last hop still names its last row.

    Parameters
    ----------
    router : Router
        One that does not hold packets (refused by ``walk_routes`` otherwise).
    width : int
        Cells of a row, 2..256 (longer routes take several rows).
    release : {"last-hop", "engine"}
        Who frees a route's rows: :meth:`next_port` on its last hop or drop (every
        hop goes through it), or the engine through :meth:`release` when the packet
        is delivered or dropped (hops taken by the compiled rule, :meth:`compiled_hop`,
        which the engine reads again after a call that may have grown the table). A
        packet the engine drops without asking the router (a failed link or
        destination) keeps its rows with ``"last-hop"``: the table grows by doubling.
    max_hops : int, optional
        The longest route (default :func:`~mpinet.routing.walk.default_max_hops`).
    """

    distributed = False
    header_width = 1

    def __init__(
        self,
        router: Router,
        width: int = 32,
        release: str = "last-hop",
        max_hops: int | None = None,
    ) -> None:
        super().__init__(router.topo)
        if release not in ("last-hop", "engine"):
            raise RoutingError(f"SourceRouted: release must be last-hop or engine, got {release!r}")
        if not 2 <= int(width) <= 256:
            raise RoutingError(f"SourceRouted: width must be in 2..256, got {width}")
        self.max_hops = default_max_hops(router.topo) if max_hops is None else int(max_hops)
        if router.holds:
            walk_routes(router, [], [], [], max_hops=1)  # the refusal, one place
        if not 1 <= self.max_hops <= MAX_HOPS:
            raise RoutingError(f"SourceRouted: max_hops must be in 1..{MAX_HOPS}, got {max_hops}")
        self.by_engine = release == "engine"
        self.inner, self.width = router, int(width)
        self.name = router.name  # engines' messages name the router
        self.fault_tolerant = router.fault_tolerant
        self.table = np.full((64, self.width), PORT_END, dtype=np.uint8)
        self.links = np.full(64, -1, dtype=np.int32)  # the row a route goes on in
        self.head = np.zeros(64, dtype=np.int64)  # the first row of each row's route
        self.last = np.full(64, -1, dtype=np.int64)  # word of a route's last read
        self.free = np.arange(63, -1, -1, dtype=np.int64)  # a stack: rows free[:nfree]
        self.nfree = 64
        self.longest = 0  # the most cells of a route walked (the engines' messages carry routes)

    def __getattr__(self, attr: str) -> Any:  # distance, uniform_flows, ... of the router
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def set_faults(self, faults: object) -> None:
        """Refused: routes walked before a fault appears would not route around it."""
        raise RoutingError(
            f"router {self.name}: routes computed at injection cannot follow faults that "
            "appear during the run"
        )

    def init_headers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """-1: no row yet (the route is walked at the first hop, which knows the pid)."""
        return np.full((np.asarray(src).size, 1), -1, dtype=np.int64)

    def next_port(
        self, nodes: np.ndarray, dests: np.ndarray, headers: np.ndarray, ctx: HopContext
    ) -> tuple[np.ndarray, np.ndarray]:
        """Ports read from the packets' rows (walked now for packets without one)."""
        h = np.asarray(headers, dtype=np.int64).reshape(-1).copy()
        fresh = np.flatnonzero(h < 0)
        if fresh.size:
            walked = self.walk_rows(nodes[fresh], dests[fresh], ctx.pids[fresh], ctx.seed, ctx.step)
            h[fresh] = walked
        flat = self.table.reshape(-1)
        port = flat[h].astype(np.int64)
        jump = port == PORT_NEXT
        if jump.any():  # the route goes on in its next row
            h[jump] = self.links[h[jump] // self.width].astype(np.int64) * self.width
            port[jump] = flat[h[jump]]
        dropped = port == PORT_DROP
        port[dropped] = DROP
        if not self.by_engine:
            done = h == self.last[h // self.width]
            self._free_routes(self.head[h[done] // self.width])
        return port, (h + (~dropped).astype(np.int64)).reshape(-1, 1)

    def walk_rows(self, src, dst, pids, seed: int, step: int) -> np.ndarray:
        """Walk the routes of packets at their sources into free rows; their words, (M,)."""
        ports, nhops = walk_routes(self.inner, src, dst, pids, seed, step, self.max_hops, True)
        m, per = nhops.size, self.width - 1
        cells = nhops + (ports[np.arange(m), nhops] == PORT_DROP)  # a drop's marker too
        self.longest = max(self.longest, int(cells.max(initial=0)))
        nrows = np.maximum(1, -(-cells // per))
        rows = self._take(int(nrows.sum()))
        first = np.cumsum(nrows) - nrows  # each route's first row among ``rows``
        self.table[rows] = PORT_END
        self.last[rows] = -1  # a reused row's old route ended elsewhere
        self.head[rows] = np.repeat(rows[first], nrows)
        more = np.ones(rows.size, dtype=bool)
        more[first + nrows - 1] = False  # the routes' last rows link nowhere
        self.links[rows[more]] = rows[np.flatnonzero(more) + 1]
        self.links[rows[~more]] = -1
        self.table[rows[more], per] = PORT_NEXT
        i, k = np.nonzero(np.arange(ports.shape[1])[None, :] < cells[:, None])
        self.table[rows[first[i] + k // per], k % per] = ports[i, k]
        start = source_headers(rows[first], self.width)
        end = rows[first + nrows - 1] * self.width + (cells - 1) % per  # the last cell read
        self.last[rows[first + nrows - 1]] = np.where(cells > 0, end, -1)
        return start

    def rewalk(self, src, dst, pids, seed: int, step: int, hops) -> np.ndarray:
        """Words of packets received from another rank, ``hops`` hops into their routes.

        A word names a row of the rank that walked it, so the receiving rank walks the
        route again from its source (the same route: the router is oblivious) and skips
        the hops taken. ``step`` is passed to the router, which does not read it.
        """
        words = self.walk_rows(src, dst, pids, seed, step)
        k = np.asarray(hops, dtype=np.int64).reshape(-1).copy()
        per = self.width - 1
        while True:  # follow the links past the rows already travelled
            far = np.flatnonzero(k > per)  # k == per: the link cell, followed by the hop
            if far.size == 0:
                return words + k
            words[far] = self.links[words[far] // self.width].astype(np.int64) * self.width
            k[far] -= per

    def compiled_hop(self) -> CompiledHop | None:
        """The rule reading the current table (:data:`mpinet.routing.compiled.SOURCE`), for an
        engine that frees rows (``release="engine"``) and reads the rule again after every
        call that may have walked rows (the table may have grown); None otherwise."""
        return source_rule(self.table, self.links) if self.by_engine else None

    def release(self, headers: object) -> None:
        """Free the rows of packets delivered or dropped (``release="engine"``), from the
        header words they carry then (-1: no row)."""
        words = np.asarray(headers, dtype=np.int64).reshape(-1)
        self._free_routes(self.head[words[words >= 0] // self.width])

    def keep(self, words: object) -> None:
        """Free every row but those of the routes of ``words`` (the words packets in flight
        carry; -1: no row): an engine that cannot tell when a packet leaves (delivered,
        dropped, or gone to another rank) collects the rows of the others at once."""
        w = np.asarray(words, dtype=np.int64).reshape(-1)
        rows = np.unique(self.head[w[w >= 0] // self.width])
        used = np.zeros(self.table.shape[0], dtype=bool)
        while rows.size:  # each route's rows, along its links
            used[rows] = True
            rows = self.links[rows].astype(np.int64)
            rows = rows[rows >= 0]
        free = np.flatnonzero(~used)[::-1]  # popped low rows first, as at the start
        self.nfree = free.size
        self.free[: free.size] = free

    def _free_routes(self, rows: np.ndarray) -> None:
        """Put the rows of the routes starting at ``rows`` back on the stack."""
        while rows.size:
            self.free[self.nfree : self.nfree + rows.size] = rows
            self.nfree += rows.size
            rows = self.links[rows].astype(np.int64)
            rows = rows[rows >= 0]

    def grow(self, n: int) -> None:
        """Double the table until ``n`` rows are free; the new rows go on the stack."""
        while self.nfree < n:
            old = self.table.shape[0]
            self.table = np.concatenate([self.table, np.full_like(self.table, PORT_END)])
            self.links = np.concatenate([self.links, np.full(old, -1, np.int32)])
            self.head = np.concatenate([self.head, np.zeros(old, np.int64)])
            self.last = np.concatenate([self.last, np.full(old, -1, np.int64)])
            self.free = np.concatenate([self.free, np.zeros(old, np.int64)])
            self.free[self.nfree : self.nfree + old] = np.arange(2 * old - 1, old - 1, -1)
            self.nfree += old

    def _take(self, n: int) -> np.ndarray:
        self.grow(n)
        self.nfree -= n
        return self.free[self.nfree : self.nfree + n][::-1].copy()
