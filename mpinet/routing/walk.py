"""Contention-free route following: every packet takes its router's port each hop.

A pure, serial, vectorized simulation with no queues and no MPI: it measures
route lengths and link use and checks the router (every chosen port must
exist). ``mpinet routes`` and the tests build on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.errors import RoutingError
from mpinet.routing.base import HopContext, Router
from mpinet.topology.base import Topology


def default_max_hops(topo: Topology) -> int:
    """Hop limit of :func:`walk` when none is given: ``min(4 N, 65536)``."""
    return min(4 * topo.num_nodes, 1 << 16)


def walk(
    topo: Topology,
    router: Router,
    src: object,
    dst: object,
    seed: int = 0,
    max_hops: int | None = None,
    paths: bool = False,
    pids: object = None,
    per_packet_classes: bool = False,
) -> dict[str, Any]:
    """Follow the routes of packets ``src[i] -> dst[i]`` hop by hop.

    Packet ``i`` has pid ``i``; hop ``h`` is decided with
    ``HopContext(step=h, pids, hops, seed)`` for the packets still travelling.
    The next node is computed by ``topo.neighbors``, independently of any
    router table.

    Parameters
    ----------
    topo : Topology
    router : Router
        Built for ``topo``.
    src, dst : array_like of int
        Node ids (broadcast against each other).
    seed : int
        Seed of the routers' random choices.
    max_hops : int, optional
        Give up after this many hops (default :func:`default_max_hops`).
    paths : bool
        Also return the visited nodes.
    pids : array_like of int, optional
        Packet ids keying the routers' random choices (default ``0..M-1``); pass
        the engine's ids to reproduce its routes.
    per_packet_classes : bool
        Also return ``class_hops``: {port class: (M,) hops of that class}.

    Returns
    -------
    dict
        ``lengths`` (M,) int64 hops taken; ``ok`` (M,) bool, reached within
        ``max_hops``; ``port_counts`` (degree,) int64 links used per port;
        ``class_counts`` {port class: links used}; with ``paths=True``,
        ``paths`` (M, L+1) int64 nodes visited, padded with -1; ``max_hops``.

    Raises
    ------
    RoutingError
        The router chose a port that does not exist at a node; the message
        names the router, the node's label and the port.
    """
    s, d = np.broadcast_arrays(np.asarray(src), np.asarray(dst))
    s, d = topo.check_ids(s, "src"), topo.check_ids(d, "dst")
    limit = default_max_hops(topo) if max_hops is None else int(max_hops)
    deg = topo.degree
    nodes = s.copy()
    headers = np.asarray(router.init_headers(s, d), dtype=np.int64)
    lengths = np.zeros(s.size, dtype=np.int64)
    port_counts = np.zeros(deg, dtype=np.int64)
    trace = [s.copy()] if paths else None
    ids = np.arange(s.size, dtype=np.int64) if pids is None else np.asarray(pids, np.int64)
    cls_names = list(dict.fromkeys(topo.port_classes))
    cls_of = np.array([cls_names.index(c) for c in topo.port_classes], dtype=np.int64)
    per_class = np.zeros((len(cls_names), s.size), dtype=np.int64) if per_packet_classes else None
    active = np.flatnonzero(nodes != d)
    hop = 0
    while active.size and hop < limit:
        ctx = HopContext(step=hop, pids=ids[active], hops=lengths[active], seed=seed)
        here = nodes[active]
        ports, new_headers = router.next_port(here, d[active], headers[active], ctx)
        ports = np.asarray(ports).astype(np.int64, copy=False)
        bad = (ports < 0) | (ports >= deg)
        if bad.any():
            _fail(topo, router, here, d[active], ports, bad)
        nxt = topo.neighbors(here)[np.arange(here.size), ports]
        bad = nxt < 0
        if bad.any():
            _fail(topo, router, here, d[active], ports, bad)
        nodes[active] = nxt
        headers[active] = new_headers
        lengths[active] += 1
        port_counts += np.bincount(ports, minlength=deg)
        if per_class is not None:
            per_class[cls_of[ports], active] += 1
        if trace is not None:
            step = np.full(s.size, -1, dtype=np.int64)
            step[active] = nxt
            trace.append(step)
        active = active[nxt != d[active]]
        hop += 1
    classes: dict[str, int] = {}
    for cls, count in zip(topo.port_classes, port_counts.tolist(), strict=True):
        classes[cls] = classes.get(cls, 0) + count
    out: dict[str, Any] = {
        "lengths": lengths,
        "ok": nodes == d,
        "port_counts": port_counts,
        "class_counts": classes,
        "max_hops": limit,
    }
    if per_class is not None:
        out["class_hops"] = {c: per_class[i] for i, c in enumerate(cls_names)}
    if trace is not None:
        out["paths"] = np.stack(trace, axis=1)
    return out


def _fail(
    topo: Topology,
    router: Router,
    here: np.ndarray,
    dests: np.ndarray,
    ports: np.ndarray,
    bad: np.ndarray,
) -> None:
    i = int(np.flatnonzero(bad)[0])
    p = int(ports[i])
    port = f"port {p} ({topo.ports[p]})" if 0 <= p < topo.degree else f"port {p}"
    raise RoutingError(
        f"router {router.name!r} chose {port} at node {topo.label(int(here[i]))} of "
        f"{topo.spec} (destination {topo.label(int(dests[i]))}), but no such link exists "
        f"(ports 0..{topo.degree - 1}, -1 neighbours excluded)"
    )
