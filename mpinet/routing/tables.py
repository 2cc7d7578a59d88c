"""Routing tables built serially on one process: neighbours, distances, best ports.

Everything here is vectorized numpy on whole tables; a table that would not
fit under a byte limit is refused up front with a :class:`ResourceError`
naming the network and the size.
"""

from __future__ import annotations

import numpy as np

from mpinet.errors import ResourceError
from mpinet.topology.base import DEGREE_WHY, MAX_DEGREE, Topology
from mpinet.topology.permgraph import PermCayley

#: default limit on the bytes of one router's tables
MAX_TABLE_BYTES = 2**31
#: distance of unreachable pairs in :func:`all_pairs_tables`
UNREACHABLE = 255
#: port table entry where no port leads closer (at the target, or unreachable)
NO_PORT = 255

_CHUNK = 1 << 18
_INT16_MAX = int(np.iinfo(np.int16).max)


def id_dtype(num_nodes: int) -> np.dtype:
    """Smallest signed integer type holding the ids ``-1..num_nodes-1`` (int32 or int64)."""
    return np.dtype(np.int32 if num_nodes < 2**31 else np.int64)


def neighbor_table_bytes(topo: Topology) -> int:
    """Bytes of :func:`neighbor_table` for ``topo``."""
    return topo.num_nodes * topo.degree * id_dtype(topo.num_nodes).itemsize


def check_table_bytes(topo: Topology, nbytes: int, what: str, limit: int = MAX_TABLE_BYTES) -> None:
    """Raise :class:`ResourceError` when ``nbytes`` exceed ``limit``.

    Parameters
    ----------
    topo : Topology
        The network, named in the message with its size.
    nbytes : int
        Estimated bytes of the tables.
    what : str
        What the tables are for, e.g. ``"router 'shortest' tables"``.
    limit : int
        Byte limit (default :data:`MAX_TABLE_BYTES`, 2 GiB).
    """
    if nbytes > limit:
        raise ResourceError(
            f"{what} for {topo.spec} ({topo.num_nodes:,} nodes, degree {topo.degree}) would "
            f"need {_size(nbytes)}, over the limit of {_size(limit)}; use a smaller network"
        )


def _size(nbytes: int) -> str:
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:,.1f} GiB"
    return f"{nbytes / 2**20:,.1f} MiB" if nbytes >= 2**20 else f"{nbytes:,} bytes"


def neighbor_table(topo: Topology, limit: int = MAX_TABLE_BYTES) -> np.ndarray:
    """All neighbours: ``(N, degree)`` int32 (int64 when N >= 2**31), ``-1`` = no port."""
    check_table_bytes(topo, neighbor_table_bytes(topo), "the neighbour table", limit)
    n = topo.num_nodes
    out = np.empty((n, topo.degree), dtype=id_dtype(n))
    for lo in range(0, n, _CHUNK):
        ids = np.arange(lo, min(lo + _CHUNK, n))
        if isinstance(topo, PermCayley):  # ranks only what moves, straight into the table
            topo.neighbors_into(ids, out[lo : lo + _CHUNK])
        else:
            out[lo : lo + _CHUNK] = topo.neighbors(ids)
    return out


def distances_from(topo: Topology, source: int, nb: np.ndarray | None = None) -> np.ndarray:
    """BFS distances from ``source`` to every node (serial, level-synchronous).

    Parameters
    ----------
    topo : Topology
    source : int
        Node id.
    nb : (N, degree) array, optional
        A prebuilt :func:`neighbor_table`; without it each level calls
        ``topo.neighbors`` on the frontier.

    Returns
    -------
    (N,) int16 distances, ``-1`` for nodes not reachable from ``source``.
    """
    n = topo.num_nodes
    source = int(topo.check_ids([source], "source")[0])
    dist = np.full(n, -1, dtype=np.int16)
    dist[source] = 0
    frontier = np.array([source], dtype=np.int64)
    level = 0
    while frontier.size:
        level += 1
        if level > _INT16_MAX:
            raise ResourceError(f"BFS on {topo.spec} exceeds {_INT16_MAX} levels")
        parts = []
        for lo in range(0, frontier.size, _CHUNK):
            part = frontier[lo : lo + _CHUNK]
            t = (nb[part] if nb is not None else topo.neighbors(part)).ravel()
            t = t[t >= 0]
            t = t[dist[t] < 0]
            dist[t] = level
            parts.append(t)
        new = np.concatenate(parts)
        # deduplicate: sort small levels, scan the distance array for large ones
        frontier = np.unique(new) if new.size * 32 < n else np.flatnonzero(dist == level)
    return dist


def mask_dtype(degree: int) -> np.dtype:
    """Unsigned type with one bit per port (uint8 .. uint64)."""
    for t in (np.uint8, np.uint16, np.uint32, np.uint64):
        if degree <= 8 * np.dtype(t).itemsize:
            return np.dtype(t)
    raise ResourceError(f"degree {degree} is over the limit of {MAX_DEGREE} ({DEGREE_WHY})")


def best_port_masks(nb: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Bit ``p`` set where port ``p`` leads one step closer to the BFS source of ``dist``.

    Parameters
    ----------
    nb : (N, degree) neighbour table, ``-1`` = no port
    dist : (N,) int16 distances from one node (``-1`` = unreachable)

    Returns
    -------
    (N,) :func:`mask_dtype` masks, 0 at the source and at unreachable nodes.
    """
    n, deg = nb.shape
    dt = mask_dtype(deg)
    out = np.zeros(n, dtype=dt)
    for lo in range(0, n, _CHUNK):
        blk = nb[lo : lo + _CHUNK]
        want = dist[lo : lo + _CHUNK] - 1
        acc = np.zeros(blk.shape[0], dtype=dt)
        for p in range(deg):
            col = blk[:, p]
            hit = (col >= 0) & (dist[col] == want) & (want >= 0)
            acc |= hit.astype(dt) << dt.type(p)
        out[lo : lo + _CHUNK] = acc
    return out


def lowest_ports(masks: np.ndarray) -> np.ndarray:
    """Lowest set bit of each mask as uint8, :data:`NO_PORT` where the mask is 0."""
    flat = masks.ravel()
    out = np.empty(flat.size, dtype=np.uint8)
    one = np.uint64(1)
    for lo in range(0, flat.size, _CHUNK):
        m = flat[lo : lo + _CHUNK].astype(np.uint64)
        low = np.bitwise_count((m & (~m + one)) - one).astype(np.uint8)
        low[m == 0] = NO_PORT
        out[lo : lo + _CHUNK] = low
    return out.reshape(masks.shape)


def best_ports(nb: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """First (lowest) port leading closer to the BFS source of ``dist``, uint8.

    :data:`NO_PORT` at the source itself and at unreachable nodes.
    """
    return lowest_ports(best_port_masks(nb, dist))


def all_pairs_tables_bytes(num_nodes: int, degree: int) -> int:
    """Peak bytes of :func:`all_pairs_tables` (results plus bit-plane work arrays)."""
    planes = degree + 8 + 4  # port-mask, distance and work bit-planes
    result = num_nodes * num_nodes * (1 + mask_dtype(degree).itemsize)
    return result + planes * num_nodes * ((num_nodes + 7) // 8)


def all_pairs_tables(nb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best-port masks and distances between all pairs, by bit-parallel BFS from every node.

    One bit per destination, eight destinations per byte: a level pulls the
    frontier bits of each node's neighbours port by port; a node first
    reached at this level through port ``p`` has ``p`` among its shortest
    ports. Masks and levels are accumulated as bit-planes and unpacked once.

    Parameters
    ----------
    nb : (N, degree) neighbour table of an undirected graph, ``-1`` = no port

    Returns
    -------
    masks : (N, N) :func:`mask_dtype` array indexed ``[node, destination]``
        (0 on the diagonal and where the destination cannot be reached)
    dist : (N, N) uint8 array, :data:`UNREACHABLE` where not reachable
    """
    n, deg = nb.shape
    w = (n + 7) // 8
    dt = mask_dtype(deg)
    idx = np.where(nb >= 0, nb, n).astype(np.intp)  # -1 -> an all-zero padding row
    ar = np.arange(n)
    visited = np.zeros((n + 1, w), dtype=np.uint8)
    visited[ar, ar >> 3] = (1 << (ar & 7)).astype(np.uint8)
    frontier = visited.copy()
    mplanes = np.zeros((deg, n, w), dtype=np.uint8)
    dplanes = np.zeros((8, n, w), dtype=np.uint8)
    level = 0
    while True:
        level += 1
        if level >= UNREACHABLE:
            raise ResourceError(f"all-pairs tables support diameters < {UNREACHABLE}")
        reached = np.zeros((n, w), dtype=np.uint8)
        seen = ~visited[:n]
        for p in range(deg):
            hit = frontier[idx[:, p]]
            hit &= seen
            mplanes[p] |= hit
            reached |= hit
        if not reached.any():
            break
        for b in range(8):
            if level >> b & 1:
                dplanes[b] |= reached
        visited[:n] |= reached
        frontier[:n] = reached
    masks = np.zeros((n, n), dtype=dt)
    for p in range(deg):
        bits = np.unpackbits(mplanes[p], axis=1, count=n, bitorder="little")
        masks |= bits.astype(dt) << dt.type(p)
    dist = np.zeros((n, n), dtype=np.uint8)
    for b in range(level.bit_length()):
        dist |= np.unpackbits(dplanes[b], axis=1, count=n, bitorder="little") << np.uint8(b)
    dist[np.unpackbits(visited[:n], axis=1, count=n, bitorder="little") == 0] = UNREACHABLE
    return masks, dist
