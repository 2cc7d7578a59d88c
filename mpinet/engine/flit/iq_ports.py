"""A router's ports as BookSim2 numbers them, for the iq model's allocators
(docs/iq-router.md, "Port numbers").

The round-robin pointers of BookSim's allocators and arbiters go by port number, so the
order of a router's ports decides its ties. BookSim's k-ary n-cube (``kncube``: mpinet's
``mesh:K,N`` and ``torus:K,N``) numbers the links by dimension and direction and the
terminal last, as mpinet's ports are. Its ``anynet`` (``src/networks/anynet.cpp``) numbers
the terminal first (port 0), then the links by ascending neighbour id (a router's
neighbours are a ``std::map``; its input channels are added in ascending router order,
so an input port and the output port to the same neighbour share the number), whatever
order the file lists them in. Every other network runs on BookSim as an anynet file
(``mpinet export --format anynet``, as ``scripts/booksim_check.py`` does), so the iq model
numbers its ports so. The mapping stays inside the iq model's allocators: the topology's
ports, the routes and the ideal router are unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def booksim_ports(topo: Any, nbt: np.ndarray) -> np.ndarray:
    """BookSim's number of each port of the rows ``nbt`` (``(own, degree)`` neighbours, -1:
    no link) as ``(own, degree + 1)``, the terminal's last: mpinet's own numbering on a mesh
    or torus; else the terminal 0 and the links ``1..`` by ascending neighbour id, ports
    without a link after them (BookSim's router has none: a pointer past its last port
    wraps to port 0 either way)."""
    own, deg = nbt.shape
    if getattr(topo, "family", "") in ("mesh", "torus"):  # (a faulty one keeps its family)
        return np.tile(np.arange(deg + 1, dtype=np.int64), (own, 1))
    key = np.where(nbt >= 0, nbt, topo.num_nodes + np.arange(deg))
    order = np.argsort(key, axis=1, kind="stable")
    lab = np.empty((own, deg + 1), np.int64)
    np.put_along_axis(lab, order, np.arange(1, deg + 1, dtype=np.int64)[None, :], axis=1)
    lab[:, deg] = 0
    return lab


def port_maps(plab: np.ndarray | None, own: int, nport: int) -> tuple[np.ndarray, np.ndarray]:
    """``(plab, pmap)`` flat, ``own * nport``: BookSim's number of each port (None: mpinet's
    own) and its inverse, mpinet's port of each BookSim number."""
    if plab is None:
        plab = np.tile(np.arange(nport, dtype=np.int64), (own, 1))
    plab = np.ascontiguousarray(plab, np.int64).reshape(own, nport)
    pmap = np.empty_like(plab)
    np.put_along_axis(pmap, plab, np.arange(nport, dtype=np.int64)[None, :], axis=1)
    return plab.ravel(), pmap.ravel()
