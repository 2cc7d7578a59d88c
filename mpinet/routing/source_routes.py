"""Routes computed at injection: a packet's whole route from its router, hop by hop.

:func:`walk_routes` asks the router's own vectorized :meth:`~Router.next_port`
for every hop of every packet at once (a loop over the hop index, vectorized
over the packets still moving), with the :class:`HopContext` the engines build
(``pids``, ``hops`` taken so far, ``seed``) and each hop's header handed to the
next, as the engines do. The route is then a row of ports: the compiled steps
read it (:data:`mpinet.routing.compiled.SOURCE`) instead of calling a router
that numba cannot compile.

Why this is exact: a router that does not hold packets decides from the node,
the destination, the header it set at injection and changed at every hop, the
packet's id, its hop count and the seed, never from the step or the network's
state (``step`` is read only by :attr:`Router.holds` routers, which are refused
here). So the route a packet follows under contention is the one it follows
alone, and walking it at injection gives the same ports in the same order.

:class:`SourceRouted` wraps a router so that any engine routes through such rows
(the packet engine's tests compare its runs with the router's own).
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from mpinet.errors import RoutingError
from mpinet.routing.base import DROP, CompiledHop, HopContext, Router

#: the code of the route-row hop (:data:`mpinet.routing.compiled.SOURCE`)
HOP_CODE = 4

#: a route row's entry past the route's end
PORT_END = 255
#: a route row's entry where the router dropped the packet (no route around faults)
PORT_DROP = 254
#: the widest degree a route row can hold (ports 0..253 stay below the markers)
MAX_DEGREE = PORT_DROP
#: the longest route a row may hold (the compiled hop keeps the hop count in a byte's range)
MAX_HOPS = 254


def walk_routes(
    router: Router,
    src: object,
    dst: object,
    pids: object,
    seed: int = 0,
    step: int = 0,
    max_hops: int = 64,
) -> tuple[np.ndarray, np.ndarray]:
    """The whole route of each packet ``src[i] -> dst[i]`` (id ``pids[i]``) as its ports.

    Parameters
    ----------
    router : Router
        A router that does not hold packets, built for its network.
    src, dst, pids : array_like of int
        Sources, destinations and packet ids (broadcast against each other).
    seed : int
        The run's seed (keys the routers' random choices with the pids and hops).
    step : int
        The step of the first hop's :class:`HopContext`; hop ``h`` gets ``step + h``
        (the routers accepted here do not read it).
    max_hops : int
        Width of the rows, 1..254: a longer route raises.

    Returns
    -------
    ports : (M, max_hops) uint8
        Port of each hop; :data:`PORT_END` past the route's end, :data:`PORT_DROP`
        at the hop where the router dropped the packet (``DROP``: no route).
    nhops : (M,) int64
        Hops of each route (before its drop, if dropped).

    Raises
    ------
    RoutingError
        The router holds packets, the degree exceeds 253, ``max_hops`` is out of
        range, the router chose a port with no link (or ``WAIT``), or a route is
        longer than ``max_hops`` (a loop?); the message names the router.
    """
    topo = router.topo
    if router.holds:
        raise RoutingError(
            f"router {router.name}: its hops depend on the step (it holds packets), so its "
            "routes cannot be computed at injection"
        )
    if topo.degree > MAX_DEGREE - 1:
        raise RoutingError(
            f"router {router.name} on {topo.spec}: degree {topo.degree} does not fit a route "
            f"row (ports 0..{MAX_DEGREE - 1})"
        )
    if not 1 <= int(max_hops) <= MAX_HOPS:
        raise RoutingError(f"walk_routes: max_hops must be in 1..{MAX_HOPS}, got {max_hops}")
    s, d, p = np.broadcast_arrays(np.asarray(src), np.asarray(dst), np.asarray(pids))
    s = topo.check_ids(s.ravel(), "src")
    d = topo.check_ids(d.ravel(), "dst")
    p = np.asarray(p, dtype=np.int64).ravel()
    m, deg = s.size, topo.degree
    ports = np.full((m, int(max_hops)), PORT_END, dtype=np.uint8)
    nhops = np.zeros(m, dtype=np.int64)
    headers = np.asarray(router.init_headers(s, d), dtype=np.int64).reshape(m, -1)
    nodes = s.copy()
    active = np.flatnonzero(nodes != d)
    for h in range(int(max_hops)):
        if active.size == 0:
            break
        here, to = nodes[active], d[active]
        ctx = HopContext(step=step + h, pids=p[active], hops=np.full(active.size, h), seed=seed)
        port, new = router.next_port(here, to, headers[active], ctx)
        port = np.asarray(port, dtype=np.int64)
        drop = port == DROP
        if drop.any():  # the engine drops it there: its route ends with the marker
            ports[active[drop], h] = PORT_DROP
            keep = ~drop
            active, here, to, port = active[keep], here[keep], to[keep], port[keep]
            new = np.asarray(new)[keep]
        bad = (port < 0) | (port >= deg)
        nxt = np.full(port.size, -1, dtype=np.int64)
        ok = ~bad
        nxt[ok] = topo.neighbors(here[ok])[np.flatnonzero(ok), port[ok]]
        if (nxt < 0).any():
            i = int(np.flatnonzero(nxt < 0)[0])
            _bad_port(router, int(here[i]), int(to[i]), int(p[active[i]]), int(port[i]))
        ports[active, h] = port
        headers[active] = np.asarray(new, dtype=np.int64).reshape(active.size, -1)
        nodes[active] = nxt
        nhops[active] += 1
        active = active[nxt != to]
    if active.size:
        i = int(active[0])
        topo_ = router.topo
        raise RoutingError(
            f"router {router.name}: the route of packet {int(p[i])} from "
            f"{topo_.label(int(s[i]))} to {topo_.label(int(d[i]))} is longer than "
            f"max_hops = {max_hops} hops (a loop?)"
        )
    return ports, nhops


def source_headers(rows: object, width: int) -> np.ndarray:
    """Header words of packets starting their routes on table rows ``rows``.

    The encoding, here only: a packet at hop ``k`` of row ``r`` of a table ``width``
    ports wide carries ``r * width + k``, the flat index of its next port, so a
    hop is one read and the header after it is the word plus one.
    """
    return np.asarray(rows, dtype=np.int64) * int(width)


def source_rule(table: np.ndarray) -> CompiledHop:
    """The compiled rule reading routes from ``table`` ((rows, width) uint8, C order):
    ``ta`` its flat view (the engine may write rows in place), ``prm[0]`` the width."""
    if table.dtype != np.uint8 or table.ndim != 2 or not table.flags.c_contiguous:
        raise RoutingError("source_rule: the route table must be a C-ordered 2-d uint8 array")
    prm = np.array([table.shape[1], 0, 0], dtype=np.int64)
    return CompiledHop(HOP_CODE, prm, table.reshape(-1), np.zeros(1, np.int32))


@nb.njit(cache=True, nogil=True, inline="always")
def source_hop_one(h, ta):
    """``(port, header after)`` of a packet carrying ``h`` (:func:`source_headers`):
    ``DROP`` where its row says the router dropped it."""
    p = np.int64(ta[h])
    if p == PORT_DROP:
        return np.int64(DROP), h
    return p, h + 1


def _bad_port(router: Router, node: int, dst: int, pid: int, port: int) -> None:
    topo = router.topo
    raise RoutingError(
        f"router {router.name} chose port {port} at node {topo.label(node)} of {topo.spec} "
        f"for packet {pid} (destination {topo.label(dst)}), but no such link exists "
        f"(ports 0..{topo.degree - 1}, -1 neighbours excluded)"
    )


class SourceRouted(Router):
    """``router`` with its routes computed at injection and read from a route table.

    A packet's first call (header -1, set by :meth:`init_headers`) walks its route
    (:func:`walk_routes`, with its pid, the run's seed and step) into a free row of
    the table, or the engine walks a batch at injection (:meth:`walk_rows`); every
    hop then reads the row through :func:`source_hop_one`. The engine sees the
    router's own ports, so a run gives the router's own results (tested on both
    engines). A row is ``max_hops + 1`` ports wide, so a packet's word stays in its
    row after the last hop (the row of any word a packet carries: ``word // width``).

    Parameters
    ----------
    router : Router
        One that does not hold packets (refused by :func:`walk_routes` otherwise).
    max_hops : int
        The longest route, 1..254 (a longer one raises when walked).
    release : {"last-hop", "engine"}
        Who frees a row: :meth:`next_port` on the route's last hop or drop (every hop
        goes through it), or the engine through :meth:`release` when the packet is
        delivered or dropped (hops taken by the compiled rule, :meth:`compiled_hop`,
        which the engine reads again after a call that may have grown the table). A
        packet the engine drops without asking the router (a failed link or
        destination) keeps its row with ``"last-hop"``: the table grows by doubling.
    """

    distributed = False
    header_width = 1

    def __init__(self, router: Router, max_hops: int = 64, release: str = "last-hop") -> None:
        super().__init__(router.topo)
        if release not in ("last-hop", "engine"):
            raise RoutingError(f"SourceRouted: release must be last-hop or engine, got {release!r}")
        self.by_engine = release == "engine"
        if router.holds:
            walk_routes(router, [], [], [], max_hops=max_hops)  # the refusal, one place
        if not 1 <= int(max_hops) <= MAX_HOPS:
            raise RoutingError(f"SourceRouted: max_hops must be in 1..{MAX_HOPS}, got {max_hops}")
        self.inner, self.max_hops, self.width = router, int(max_hops), int(max_hops) + 1
        self.name = router.name  # engines' messages name the router
        self.fault_tolerant = router.fault_tolerant
        self.table = np.full((64, self.width), PORT_END, dtype=np.uint8)
        self.last = np.zeros(64, dtype=np.int64)  # header word of each row's last read
        self.free = np.arange(63, -1, -1, dtype=np.int64)  # a stack: rows free[:nfree]
        self.nfree = 64

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
            h[fresh] = self.walk_rows(
                nodes[fresh], dests[fresh], ctx.pids[fresh], ctx.seed, ctx.step
            )
        port = self.table.reshape(-1)[h].astype(np.int64)
        dropped = port == PORT_DROP
        port[dropped] = DROP
        if not self.by_engine:
            self._release(h[h == self.last[h // self.width]] // self.width)
        return port, (h + (~dropped).astype(np.int64)).reshape(-1, 1)

    def walk_rows(self, src, dst, pids, seed: int, step: int) -> np.ndarray:
        """Walk the routes of packets at their sources into free rows; their words, (M,)."""
        ports, nhops = walk_routes(self.inner, src, dst, pids, seed, step, self.max_hops)
        m = nhops.size
        while self.nfree < m:  # double the table; the new rows go on the stack
            n = self.table.shape[0]
            self.table = np.concatenate([self.table, np.full_like(self.table, PORT_END)])
            self.last = np.concatenate([self.last, np.zeros(n, np.int64)])
            self.free = np.concatenate([self.free, np.zeros(n, np.int64)])
            self._release(np.arange(2 * n - 1, n - 1, -1, dtype=np.int64))
        self.nfree -= m
        rows = self.free[self.nfree : self.nfree + m][::-1].copy()
        self.table[rows, : self.max_hops] = ports
        self.table[rows, self.max_hops] = PORT_END
        start = source_headers(rows, self.width)
        # the last read: the route's last hop, or the hop where it says DROP
        drops = ports[np.arange(m), np.minimum(nhops, self.max_hops - 1)] == PORT_DROP
        self.last[rows] = start + np.maximum(nhops - 1 + drops, 0)
        return start

    def compiled_hop(self) -> CompiledHop | None:
        """The rule reading the current table (:data:`mpinet.routing.compiled.SOURCE`), for an
        engine that frees rows (``release="engine"``) and reads the rule again after every
        call that may have walked rows (the table may have grown); None otherwise."""
        return source_rule(self.table) if self.by_engine else None

    def release(self, headers: object) -> None:
        """Free the rows of packets delivered or dropped (``release="engine"``), from the
        header words they carry then (-1: no row)."""
        words = np.asarray(headers, dtype=np.int64).reshape(-1)
        self._release(words[words >= 0] // self.width)

    def _release(self, rows: np.ndarray) -> None:
        self.free[self.nfree : self.nfree + rows.size] = rows
        self.nfree += rows.size
