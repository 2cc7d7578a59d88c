"""Speculation and output speedup on the lean iq path (docs/iq-router.md, "Session 19:
output speedup and speculation on the lean path"), inlined into
:func:`~mpinet.engine.flit.iq_lean.run_block`.

Speculative (:func:`spec_bid`): a head in VC allocation also bids for the switch, where a
free VC of its route has a credit, below every VC that has its output (label ``v + SPEC``);
its grant holds only if VC allocation gave it, in the same cycle, a VC with a credit.

Output speedup (:func:`xout`): ``osp`` crossbar outputs a port, the input's BookSim number
choosing one, so several flits may enter one output queue in a cycle (it sends one a cycle),
in the order of switch allocation's queue (the general path's ``SA_SEQ``; BookSim's
``_sw_alloc_vcs``).
The lean path has no queues: each input VC keeps the key of its place in switch allocation's
queue (``skey``) and in VC allocation's (``vkey``), numbers whose order is the queues' order.
Every item of a one-cycle stage is evaluated each cycle and put back in its order, so an item
keeps its key; a new item's key says where the general path appends it:

- a flit reaching an empty VC at cycle ``t``: ``t * KS + r``, ``r`` its port's rank in the
  read phase's order (after every item the cycle's stages put back);
- a head whose next packet leaves switch allocation's update at ``t`` (the tail sent, more
  flits behind): ``t * KS + KP + i`` into VC allocation (``routing_delay = 0``), ``i`` the
  order of those updates; with route computation (``routing_delay = 1``) its route is taken
  at ``t + 1``, before any of that cycle's other items: :func:`low` ``(t + 1) + i``, a flit
  reaching it at ``t``: :func:`low` ``(t) + KS + r``;
- a head granted its VC at ``t`` (not speculative): :func:`low` ``(t) + KS + KP + i``, ``i``
  its place in VC allocation's order (after route computation's items of that cycle).

:func:`low` ``(t)`` is below every key of the cycles before ``t``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit.iq_lean_alloc import ahead
from mpinet.engine.flit.iq_lean_state import OUT

U1 = np.uint64(1)
SPEC = 64  # a switch bid's label: VC + SPEC where speculative (a head in VC allocation)

#: a cycle's span of keys, and the offset of the items switch allocation's update appends
KS, KP = 1 << 22, 1 << 20


@njit(cache=True, inline="always")
def low(t):
    """The keys of the items appended by cycle ``t``'s route computation and VC allocation,
    before every item already queued: ``low(t) .. low(t) + 2 * KS``."""
    return -(t + 1) * 4 * KS


@njit(cache=True, inline="always")
def rank(p, deg, rot):
    """Input port ``p``'s place in the read phase's order: the state's port order, the
    terminal first where BookSim numbers it 0 (``rot``)."""
    if rot == 0:
        return p
    return p + 1 if p < deg else 0


@njit(cache=True, inline="always")
def va_keys(nhd, hj, b0, hv, vkey, skey, base):
    """The heads VC allocation granted now (``hj[:nhd]``, those with an output) join switch
    allocation in VC allocation's order: keys ``base + i``."""
    for h in range(nhd):
        iv = b0 + hj[h]
        if hv[iv, OUT] < 0:
            continue
        k = vkey[iv]
        i = 0
        for g in range(nhd):
            jv = b0 + hj[g]
            if hv[jv, OUT] >= 0 and vkey[jv] < k:
                i += 1
        skey[iv] = base + i


@njit(cache=True, inline="always")
def sa_order(nr, rin, rout, rlab, grant, so, isp, ipb, nv, s):
    """Switch allocation's bids (rows ``so ..`` of ``rin``/``rout``, ``rlab``, ``grant``)
    sorted in place into their queue's order (``skey``; ``wo``, ``wk`` scratch), ``rout``
    their output ports again (``rop``), so the winners move in that order."""
    wo, wk, rop = s.wo, s.wk, s.rop
    for y in range(nr):
        k = s.skey[(ipb + (rin[so + y] if isp == 1 else rin[so + y] // isp)) * nv + (rlab[y] & 63)]
        i = y
        while i > 0 and wk[i - 1] > k:
            wo[i], wk[i] = wo[i - 1], wk[i - 1]
            i -= 1
        wo[i], wk[i] = y, k
    for i in range(nr):  # the rows, permuted (through wk's room, then rop's)
        wk[i] = rin[so + wo[i]]
    for i in range(nr):
        rin[so + i] = wk[i]
    for i in range(nr):
        wk[i] = rop[wo[i]]
    for i in range(nr):
        rout[so + i] = wk[i]
    for i in range(nr):
        wk[i] = rlab[wo[i]]
    for i in range(nr):
        rlab[i] = wk[i]
    for i in range(nr):
        wk[i] = grant[wo[i]]
    for i in range(nr):
        grant[i] = wk[i]


@njit(cache=True, inline="always")
def by_node(dq, a, m, dst):
    """The ``m`` packets delivered in a cycle (``dq[a:a + m]``) in node order, the general
    path's (output queues delay some: they were listed by their switch allocation)."""
    for x in range(a + 1, a + m):
        pk = dq[x]
        i = x
        while i > a and dst[dq[i - 1]] > dst[pk]:
            dq[i] = dq[i - 1]
            i -= 1
        dq[i] = pk


@njit(cache=True, inline="always")
def spec_bid(j, op, fr, ipb, eib, nv, npt, isp, so, nr, s):
    """The speculative switch bid of head ``j`` (input port ``p`` and VC ``v``, ``p * nv +
    v``: in VC allocation, ``fr`` its free output VCs on port ``op``): made where one of them
    has a credit, below every bid of a VC with its output (``iq_router``'s priority -1, after
    those: they are all in), then nearest the crossbar input's pointer; returns the bids'
    count."""
    cred, smap, rlab = s.cred, s.smap, s.rlab
    p = j // nv
    v = j - p * nv
    ok = False
    while fr:
        if cred[(ipb + op) * nv + il.low(fr)] > 0:
            ok = True
            break
        fr &= fr - U1
    if not ok:
        return nr
    ei = p if isp == 1 else p * isp + v - (v // isp) * isp
    key = ei * npt + op
    y = smap[key]
    if y < 0:
        smap[key] = nr
        s.rin[so + nr], s.rout[so + nr], rlab[nr] = ei, op, v + SPEC
        return nr + 1
    if rlab[y] >= SPEC and ahead(v, rlab[y] - SPEC, s.vrr[eib + ei], nv):
        rlab[y] = v + SPEC
    return nr


@njit(cache=True, inline="always")
def spec_grants(nr, rin, rout, rlab, grant, so, isp, ipb, eib, nv, osp, s):
    """The speculative grants (labels ``v + SPEC``) held where VC allocation gave the head,
    in this cycle, a VC with a credit; the others dropped (the pointers moved all the same:
    the input's VC pointer too, as the general path's ``sw_rr``)."""
    for y in range(nr):
        v = rlab[y]
        if v < SPEC:
            continue
        v -= SPEC
        rlab[y] = v
        if grant[y] == 0:
            continue
        ei = rin[so + y]
        op = rout[so + y] if osp == 1 else s.rop[y]
        out = s.hv[(ipb + (ei if isp == 1 else ei // isp)) * nv + v, OUT]
        if out < 0 or s.cred[(ipb + op) * nv + (out & 63)] <= 0:
            grant[y] = 0
            s.vrr[eib + ei] = il.wrap(v + isp, nv)


@njit(cache=True, inline="always")
def xout(nr, so, isp, osp, s):
    """The bids' crossbar outputs (rows ``so ..`` of ``rout``, their output ports kept in
    ``rop``): under output speedup, by BookSim's number of the input (``xo``,
    ``iq_router``'s)."""
    for y in range(nr):
        ei, op = s.rin[so + y], s.rout[so + y]
        s.rop[y] = op
        s.rout[so + y] = op * osp + s.xo[ei if isp == 1 else ei // isp]
