"""The wait-for edges of an iq run that stopped moving (``model.router = "iq"``,
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

from mpinet.engine.flit import iq_router as ir
from mpinet.engine.flit.deadlock import wait_for_cycle


def edges(s: Any, prm: Any) -> list[tuple[int, int]]:
    """This rank's edges "VC -> the VC its front flit waits for" (``s``, ``prm``: the run's
    :class:`~mpinet.engine.flit.iq_state.IQArrays` and
    :class:`~mpinet.engine.flit.iq_state.IQParams`)."""
    nport, nvc, deg = prm.nport, prm.nvc, prm.deg
    a, b = prm.lo * nport * nvc, prm.hi * nport * nvc
    iv = a + np.flatnonzero(s.ibn[a:b] > 0)
    node, rest = np.divmod(iv, nport * nvc)
    q, v = np.divmod(rest, nvc)
    active = s.vst[iv] == ir.ACTIVE
    op = np.where(active, s.vop[iv], s.vrp[iv])
    v2 = np.where(active, s.vov[iv], s.vlo[iv])
    ok = (q < deg) & (active | (s.vst[iv] == ir.VC_ALLOC)) & (op >= 0) & (op < deg)
    link = node[ok] * deg + q[ok]
    me = (s.nbt[link] * deg + s.rev[link]) * nvc + v[ok]
    to = (node[ok] * deg + op[ok]) * nvc + v2[ok]
    return list(zip(me.tolist(), to.tolist(), strict=True))


def report(eng: Any, s: Any, prm: Any, step: int, in_flight: int) -> dict:
    """The deadlock report of the iq run on ``eng`` stopped at cycle ``step``; collective."""
    return wait_for_cycle(eng, step, in_flight, edges(s, prm))
