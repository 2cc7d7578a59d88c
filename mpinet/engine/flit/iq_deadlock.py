"""The iq router's deadlock reports (``model.router = "iq"``, docs/iq-router.md): a look
while packets are injected (:class:`Look`, the ideal model's
:class:`~mpinet.engine.flit.deadlock_live.LiveCheck` on the iq state that
:mod:`~mpinet.engine.flit.iq_looks` lists in the compiled blocks), and the wait-for edges of
an iq run that stopped moving (``model.router = "iq"``,
docs/iq-router.md), in the names of the ideal model's deadlock report
(:func:`~mpinet.engine.flit.deadlock.wait_for_cycle`, which walks them to one cycle and
reports it: the same keys, text and trace datasets as the ideal model's).

When no flit has moved for the run's quiet cycles, every flit left is in an input VC's
buffer (channels, crossbar and output queues drain without waiting). The front flit of an
input VC of a link waits for one downstream VC of the router's output ``op``:

* its packet is *active* (it holds VC ``ov`` of ``op``): that VC, whose buffer at the next
  router is full (no credit), or, with ``wait_for_tail_credit``, not yet drained of an
  earlier packet's tail;
* its head is in *VC allocation*: the lowest VC of its route's range (every VC of the range
  is held by another packet, as the ideal model's report names the lowest).

A VC is named by its sender's link, ``(u * degree + port) * V + v``; an input VC at node
``n``, input port ``q`` is the end of the link from ``nbt[n, q]`` through its port
``rev[n, q]``. The terminal's injection VCs have no link (the ideal model's source queues
are not listed either) and a hop into the terminal never waits for long, so neither is an
edge. Each rank lists the input VCs of its own nodes; the walk is on their union, so the
cycle is the same on any rank count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_looks
from mpinet.engine.flit import iq_router as ir
from mpinet.engine.flit.deadlock import wait_for_cycle
from mpinet.engine.flit.deadlock_live import CHECK_EVERY, LiveCheck
from mpinet.engine.flit.iq_ports import PortOrder, mpinet_ids, mpinet_ivs


def edges(s: Any, prm: Any, order: PortOrder | None = None) -> list[tuple[int, int]]:
    """This rank's edges "VC -> the VC its front flit waits for" (``s``, ``prm``: the run's
    :class:`~mpinet.engine.flit.iq_state.IQArrays` and
    :class:`~mpinet.engine.flit.iq_state.IQParams`), in mpinet's ports (``order``: the state
    ports of the rank's nodes and their neighbours; None: mpinet's own)."""
    nport, nvc, deg = prm.nport, prm.nvc, prm.deg
    iv = np.flatnonzero(s.hv[:, il.IBN] > 0)  # the rank's input VCs (of its nodes lo .. hi - 1)
    node, rest = np.divmod(iv, nport * nvc)
    node += prm.lo
    q, v = np.divmod(rest, nvc)
    st = s.hv[iv, il.VST]
    active = st == ir.ACTIVE
    op = np.where(active, s.hv[iv, il.VOP], s.va[iv, il.VRP])
    v2 = np.where(active, s.hv[iv, il.VOV], s.va[iv, il.VLO])
    ok = (q < deg) & (active | (st == ir.VC_ALLOC)) & (op >= 0) & (op < deg)
    link = (node[ok] - prm.lo) * deg + q[ok]  # the rank's own rows of the links' tables
    me = (s.nbt[link] * deg + s.rev[link]) * nvc + v[ok]
    to = (node[ok] * deg + op[ok]) * nvc + v2[ok]
    me, to = mpinet_ids(me, order, deg, nvc), mpinet_ids(to, order, deg, nvc)
    return list(zip(me.tolist(), to.tolist(), strict=True))


def report(eng: Any, s: Any, prm: Any, step: int, in_flight: int,
           order: PortOrder | None = None) -> dict:  # fmt: skip
    """The deadlock report of the iq run on ``eng`` stopped at cycle ``step`` (``order``: as
    :func:`edges`'); collective."""
    return wait_for_cycle(eng, step, in_flight, edges(s, prm, order))


class Look(LiveCheck):
    """The deadlock look while injecting of an iq run on ``eng`` (off without
    ``eng.live_check`` or before :data:`~mpinet.engine.flit.deadlock_live.CHECK_EVERY` cycles
    of injection): the compiled blocks pace, scan and search (:mod:`~.iq_looks`); a look
    that found dead fronts is searched again here on the listings (gathered from every rank)
    and reported as the ideal model's look reports (``found = "check"``)."""

    def __init__(self, eng: Any, prm: Any, last: int, order: PortOrder | None = None) -> None:
        self.eng = eng
        self.order = order  # the state ports' mpinet ports (None: the same), for the report
        self.nport = prm.nport
        n, deg, nvc = prm.nnode, prm.deg, prm.nvc
        on = bool(eng.live_check) and last >= CHECK_EVERY
        self.nv, self.nl = n * deg * nvc, n * nvc  # nv + nl: the input VCs (pseudo-fronts after)
        self.dead_pids = np.empty(0, np.int64)
        self.budget = 0
        self.searches = 0
        self.arrays = iq_looks.arrays(on, (prm.hi - prm.lo) * prm.nport * nvc, nvc)

    @property
    def on(self) -> bool:
        return bool(self.arrays[0])

    def grow(self) -> None:
        """Scratch for twice the input VCs the last scan needed."""
        a = self.arrays
        need = int(a[2][iq_looks.L_NEED])
        self.arrays = (*a[:5], *iq_looks.scratch(2 * need + 64, self.eng.vcs))

    def report(self, t: int, in_flight: int) -> dict | None:
        """The report of the look of cycle ``t`` whose listings the arrays hold (the
        block's search found dead fronts, or left the search here), or None; collective."""
        lstat = self.arrays[2]
        self.budget = int(lstat[iq_looks.L_BUDGET])
        found = self.search(t, in_flight, self._listed())
        lstat[iq_looks.L_BUDGET] = self.budget
        return found

    def _listed(self) -> tuple:
        """The look's listings (``fronts, waits, fpid, hf, hb, closed, cnt``) with their ids
        in mpinet's ports, as the report names them (the compiled search's dead set does
        not depend on the names: the same graph)."""
        fronts, waits, fpid, hf, hb, closed, cnt = self.arrays[5:]
        if self.order is None:
            return self.arrays[5:]
        nf, nh, nc = (int(x) for x in cnt)
        return (self._front(fronts[:nf]), self._buffer(waits[:nf]), fpid, self._front(hf[:nh]),
                self._buffer(hb[:nh]), self._buffer(closed[:nc]), cnt)  # fmt: skip

    def _front(self, ids: np.ndarray) -> np.ndarray:
        """Fronts: input VCs ``iv`` and pseudo-fronts ``NIV + iv * V + v``."""
        niv, nvc, out = self.nv + self.nl, self.eng.vcs, ids.copy()
        real = ids < niv
        out[real] = mpinet_ivs(ids[real], self.order, self.nport, nvc)
        iv, v = np.divmod(ids[~real] - niv, nvc)
        out[~real] = niv + mpinet_ivs(iv, self.order, self.nport, nvc) * nvc + v
        return out

    def _buffer(self, ids: np.ndarray) -> np.ndarray:
        """Waits and holds: ``B`` (a link VC), ``A = NV + B`` and a choice ``2 NV + iv``."""
        nv, deg, nvc, out = self.nv, self.eng.deg, self.eng.vcs, ids.copy()
        b, a, c = ids < nv, (ids >= nv) & (ids < 2 * nv), ids >= 2 * nv
        out[b] = mpinet_ids(ids[b], self.order, deg, nvc)
        out[a] = nv + mpinet_ids(ids[a] - nv, self.order, deg, nvc)
        out[c] = 2 * nv + self._front(ids[c] - 2 * nv)
        return out

    def searched(self) -> int:
        """The looks searched (here and in the blocks)."""
        return self.searches + int(self.arrays[2][iq_looks.L_SEARCHED])
