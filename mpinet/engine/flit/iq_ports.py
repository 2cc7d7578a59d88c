"""A router's ports as BookSim2 numbers them, applied once where the iq model's state is
built (docs/iq-router.md, "Port numbers").

The round-robin pointers of BookSim's allocators and arbiters go by port number, so the
order of a router's ports decides its ties. BookSim's k-ary n-cube (``kncube``: mpinet's
``mesh:K,N`` and ``torus:K,N``) numbers the links by dimension and direction and the
terminal last, as mpinet's ports are. Its ``anynet`` (``src/networks/anynet.cpp``) numbers
the terminal first (port 0), then the links by ascending neighbour id (a router's
neighbours are a ``std::map``; its input channels are added in ascending router order,
so an input port and the output port to the same neighbour share the number), whatever
order the file lists them in. Every other network runs on BookSim as an anynet file
(``mpinet export --format anynet``, as ``scripts/booksim_check.py`` does).

The iq model's state numbers each router's link ports in BookSim's order (its *state
ports*; ports without a link after the links, the terminal last, as mpinet's), so BookSim's
number of state port ``q`` is ``q + rot`` taken modulo the ports (``rot``: 0 on a mesh or
torus, 1 else): a rotation, under which every round-robin choice is the same once the
pointers start rotated (:func:`~mpinet.engine.flit.iq_state.make_arrays`). The allocators
then run on the state's numbers with no lookup. The routes' output ports are renamed as
a head is routed (``sport``), the link loads, hop rows and deadlock reports back where the
run's record is made: the topology's ports, the routes and the ideal router are unchanged.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class PortOrder(NamedTuple):
    """The state ports of the nodes a rank names (its own and their neighbours, ``nodes``
    ascending): ``order[k, q]`` mpinet's port at state port ``q`` of ``nodes[k]``, and
    ``rot`` as :func:`booksim_order`'s."""

    nodes: np.ndarray
    order: np.ndarray
    rot: int

    def rows(self, u: np.ndarray) -> np.ndarray:
        """The rows of ``order`` of nodes ``u`` (named here)."""
        return np.searchsorted(self.nodes, u)

    def same(self) -> bool:
        """Whether the state ports are mpinet's own (no renaming at the boundary)."""
        return bool((self.order == np.arange(self.order.shape[1])).all())


def booksim_order(topo: Any, nbt: np.ndarray) -> tuple[np.ndarray, int]:
    """``(order, rot)``: per row of ``nbt`` (``(nodes, degree)`` neighbours, -1: no link)
    mpinet's port at each state port (``order[n, q]``), and the rotation from state ports
    to BookSim's numbers: mpinet's own order and 0 on a mesh or torus, else the links by
    ascending neighbour id (ports without a link after them: BookSim's router has none, a
    pointer past its last port wraps to port 0 either way) and 1 (the terminal is 0)."""
    own, deg = nbt.shape
    if getattr(topo, "family", "") in ("mesh", "torus"):  # (a faulty one keeps its family)
        return np.tile(np.arange(deg, dtype=np.int64), (own, 1)), 0
    key = np.where(nbt >= 0, nbt, topo.num_nodes + np.arange(deg))
    return np.argsort(key, axis=1, kind="stable").astype(np.int64), 1


def port_order(topo: Any, lo: int, nbt: np.ndarray) -> PortOrder:
    """The :class:`PortOrder` of the rank of nodes ``lo ..`` whose rows ``nbt`` (``(own,
    degree)``) are, and of their neighbours."""
    own, deg = nbt.shape
    nodes = np.unique(np.concatenate([np.arange(lo, lo + own), nbt[nbt >= 0]]))
    rows = np.asarray(topo.neighbors(nodes), np.int64).reshape(nodes.size, deg)
    order, rot = booksim_order(topo, rows)
    return PortOrder(nodes, order, rot)


def state_ports(po: PortOrder, lo: int, nbt: np.ndarray, rev: np.ndarray,
                lcount: np.ndarray) -> tuple:  # fmt: skip
    """``(nbt, rev, lcount, sport)`` of the rank's rows in state ports (``nbt`` ``(own,
    degree)``, ``rev``, ``lcount``: the rank's rows, nodes ``lo ..``, in mpinet's): the
    neighbour on each state port, the state port it arrives at there, the link's count, and
    each mpinet port's state port (a route's port is renamed so as its head is routed)."""
    own, deg = nbt.shape
    inv = np.empty_like(po.order)  # each mpinet port's state port, per node named
    np.put_along_axis(inv, po.order, np.arange(deg, dtype=np.int64)[None, :], axis=1)
    k = po.rows(np.arange(lo, lo + own))
    mine = po.order[k]
    nb = np.take_along_axis(nbt, mine, axis=1)
    rv = np.take_along_axis(rev.reshape(own, deg), mine, axis=1)
    ok = nb >= 0
    rs = np.zeros_like(rv)
    rs[ok] = inv[po.rows(nb[ok]), rv[ok]]
    lc = np.take_along_axis(lcount.reshape(own, deg), mine, axis=1)
    return nb, rs, lc, inv[k]


def mpinet_ids(ids: np.ndarray, po: PortOrder | None, deg: int, nvc: int) -> np.ndarray:
    """Link VC ids ``(u * degree + q) * V + v`` with ``q`` a state port, in mpinet's port
    (``po`` None: the same), as the deadlock reports name them."""
    if po is None or ids.size == 0:
        return ids
    link, v = np.divmod(ids, nvc)
    u, q = np.divmod(link, deg)
    return (u * deg + po.order[po.rows(u), q]) * nvc + v


def mpinet_ivs(ivs: np.ndarray, po: PortOrder | None, nport: int, nvc: int) -> np.ndarray:
    """Input VC ids ``(node * nport + q) * V + v`` with ``q`` a state port (the terminal's
    ``nport - 1`` kept), in mpinet's port (``po`` None: the same)."""
    if po is None or ivs.size == 0:
        return ivs
    pv, v = np.divmod(ivs, nvc)
    n, q = np.divmod(pv, nport)
    link = q < nport - 1
    q = q.copy()
    q[link] = po.order[po.rows(n[link]), q[link]]
    return (n * nport + q) * nvc + v
