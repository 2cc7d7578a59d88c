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
#: a route row's last entry when the route goes on in the row ``links[row]``
PORT_NEXT = 253
#: the widest degree a route row can hold (ports 0..252 stay below the markers)
MAX_DEGREE = PORT_NEXT
#: the longest route walked (as :func:`mpinet.routing.walk.default_max_hops`'s cap)
MAX_HOPS = 1 << 16


def walk_routes(
    router: Router,
    src: object,
    dst: object,
    pids: object,
    seed: int = 0,
    step: int = 0,
    max_hops: int = 64,
    trim: bool = False,
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
        The longest route, 1..65536: a longer one raises.
    trim : bool
        Return only as many columns as the longest route (at least one).

    Returns
    -------
    ports : (M, max_hops) uint8, or (M, longest) with ``trim``
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
    if topo.degree > MAX_DEGREE:
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
    limit = int(max_hops)
    ports = np.full((m, min(limit, 32)), PORT_END, dtype=np.uint8)  # widened as routes go on
    nhops = np.zeros(m, dtype=np.int64)
    headers = np.asarray(router.init_headers(s, d), dtype=np.int64)
    headers = headers.reshape(m, -1) if m else np.zeros((0, max(router.header_width, 1)), np.int64)
    nodes = s.copy()
    active = np.flatnonzero(nodes != d)
    for h in range(limit):
        if active.size == 0:
            break
        if h == ports.shape[1]:
            more = np.full((m, min(limit, 2 * h) - h), PORT_END, dtype=np.uint8)
            ports = np.concatenate([ports, more], axis=1)
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
        nxt[ok] = topo.neighbors(here[ok])[np.arange(int(ok.sum())), port[ok]]
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
    cols = max(1, int(nhops.max(initial=0)) + 1) if trim else limit  # + 1: a drop's marker
    if cols <= ports.shape[1]:
        return np.ascontiguousarray(ports[:, :cols]), nhops
    return np.pad(ports, ((0, 0), (0, cols - ports.shape[1])), constant_values=PORT_END), nhops


def source_headers(rows: object, width: int) -> np.ndarray:
    """Header words of packets starting their routes on table rows ``rows``.

    The encoding, here only: a packet at cell ``k`` of row ``r`` of a table ``width``
    cells wide carries ``r * width + k``, the flat index of its next port, so a hop
    is one read and the header after it is the word plus one. A route longer than a
    row goes on in row ``links[r]`` (:data:`PORT_NEXT` in the row's last cell).
    """
    return np.asarray(rows, dtype=np.int64) * int(width)


def source_rule(table: np.ndarray, links: np.ndarray | None = None) -> CompiledHop:
    """The compiled rule reading routes from ``table`` ((rows, width) uint8, C order):
    ``ta`` its flat view (the engine may write rows in place), ``tb`` the rows' links
    (int32, ``links[r]`` the row a route goes on in), ``prm[0]`` the width."""
    if table.dtype != np.uint8 or table.ndim != 2 or not table.flags.c_contiguous:
        raise RoutingError("source_rule: the route table must be a C-ordered 2-d uint8 array")
    tb = np.zeros(1, np.int32) if links is None else links
    if tb.dtype != np.int32:
        raise RoutingError("source_rule: the row links must be int32")
    prm = np.array([table.shape[1], 0, 0], dtype=np.int64)
    return CompiledHop(HOP_CODE, prm, table.reshape(-1), tb)


@nb.njit(cache=True, nogil=True, inline="always")
def source_hop_one(h, width, ta, tb):
    """``(port, header after)`` of a packet carrying ``h`` (:func:`source_headers`):
    ``DROP`` where its row says the router dropped it."""
    p = np.int64(ta[h])
    if p == PORT_NEXT:  # the route goes on in the linked row (a division, once a row)
        h = np.int64(tb[h // width]) * width
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
