"""Speculation and output speedup on the lean iq path (docs/iq-router.md, "Session 19:
output speedup and speculation on the lean path"), compiled apart and called from
:func:`~mpinet.engine.flit.iq_lean.run_block` (:mod:`~.iq_lean_mode` says why).

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
from mpinet.engine.flit.iq_lean_state import OUT, RHI, RLO, TOK

U1 = np.uint64(1)
SPEC = 64  # a switch bid's label: VC + SPEC where speculative (a head in VC allocation)

#: a cycle's span of keys, and the offset of the items switch allocation's update appends
KS, KP = 1 << 22, 1 << 20
#: stages of several cycles ("Session 24"): a cycle's span of route computation's keys
KC = 1 << 12


@njit(cache=True, error_model="numpy", _nrt=False)
def low(t):
    """The keys of the items appended by cycle ``t``'s route computation and VC allocation,
    before every item already queued: ``low(t) .. low(t) + 2 * KS``."""
    return -(t + 1) * 4 * KS


@njit(cache=True, error_model="numpy", _nrt=False)
def rank(p, deg, rot):
    """Input port ``p``'s place in the read phase's order: the state's port order, the
    terminal first where BookSim numbers it 0 (``rot``)."""
    if rot == 0:
        return p
    return p + 1 if p < deg else 0


@njit(cache=True, error_model="numpy", _nrt=False)
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


@njit(cache=True, error_model="numpy", _nrt=False)
def sa_order(nr, rin, rop, rlab, so, grant, smap, npt, isp, ipb, nv, skey, wo, wk):
    """Switch allocation's winners (rows ``so ..`` of ``rin``, ``rop`` their output ports)
    into ``wo`` in their queue's order (``skey``, ``wk`` scratch), the bids' map cleared;
    returns their count."""
    nw = 0
    for y in range(nr):
        ei = rin[so + y]
        smap[ei * npt + rop[y]] = -1
        if grant[y] == 0:
            continue
        k = skey[(ipb + (ei if isp == 1 else ei // isp)) * nv + (rlab[y] & 63)]
        i = nw
        while i > 0 and wk[i - 1] > k:
            wo[i], wk[i] = wo[i - 1], wk[i - 1]
            i -= 1
        wo[i], wk[i] = y, k
        nw += 1
    return nw


@njit(cache=True, error_model="numpy", _nrt=False)
def by_node(dq, a, m, dst):
    """``dq[a:a + m]`` sorted in place by ``dst[dq[i]]``, stably (an insertion sort: the
    lists are short). The packets delivered in a cycle in node order, the general path's
    (output queues delay some: they were listed by their switch allocation); a stage's
    batch by its keys (:func:`rekey`)."""
    for x in range(a + 1, a + m):
        pk = dq[x]
        i = x
        while i > a and dst[dq[i - 1]] > dst[pk]:
            dq[i] = dq[i - 1]
            i -= 1
        dq[i] = pk


@njit(cache=True, error_model="numpy", _nrt=False)
def spec_bid(p, v, op, fr, ipb, eib, nv, npt, isp, so, nr, s, prm):
    """The speculative switch bid of head VC ``v`` of input port ``p`` (in VC allocation,
    ``fr`` its free output VCs on port ``op``): made where one of them has a credit, below
    every bid of a VC with its output (``iq_router``'s priority -1), then nearest the
    crossbar input's pointer; returns the bids' count."""
    cred, smap, rlab = s.cred, s.smap, s.rlab
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
        s.rin[so + nr], rlab[nr] = ei, v + SPEC
        xout(p, op, so, nr, prm.osp, s)
        return nr + 1
    if rlab[y] >= SPEC and ahead(v, rlab[y] - SPEC, s.vrr[eib + ei], nv):
        rlab[y] = v + SPEC
    return nr


@njit(cache=True, error_model="numpy", _nrt=False)
def xout(p, op, so, nr, osp, s):
    """Bid ``nr``'s crossbar output (``rout``) for output port ``op`` from input port ``p``:
    under output speedup, by BookSim's number of the input (``xo``, ``iq_router``'s), the
    port kept in ``rop``."""
    if osp == 1:
        s.rout[so + nr] = op
    else:
        s.rout[so + nr], s.rop[nr] = op * osp + s.xo[p], op


@njit(cache=True, error_model="numpy", _nrt=False)
def spec_deep(p, v, iv, op, vfree, sfree, ipb, eib, nv, npt, isp, so, nr, nsa, sad, s, prm):
    """Speculation with an allocation of several cycles ("Session 24"): head VC ``v`` of
    input port ``p`` (``iv``), in VC allocation (its output port ``op``), is in switch
    allocation's queue too. With switch allocation free (``sfree``) it is in the batch
    (``nsa``, where ``sad > 1``) and bids where a VC of its route free to VC allocation has
    a credit: while VC allocation's batch is in flight (not ``vfree``), the VCs that batch
    granted are free until its update (``vpd``). Returns ``nr, nsa``."""
    if not sfree:
        return nr, nsa
    if sad > 1:  # (its place in the queue: rekey)
        s.wk[nsa] = iv
        nsa += 1
    fr = s.ofree[ipb + op]
    if not vfree:
        fr |= s.vpd[ipb + op]
    fr &= il.vmask(s.rte[iv, RLO], s.rte[iv, RHI])
    if fr:
        nr = spec_bid(p, v, op, fr, ipb, eib, nv, npt, isp, so, nr, s, prm)
    return nr, nsa


@njit(cache=True, error_model="numpy", _nrt=False)
def spec_held(iv, tk, vad, sad, s):
    """Whether a speculative grant of the head at ``iv``, its output VC given, holds with
    allocations of several cycles: never with ``vad > 1`` (VC allocation's update comes
    ``vad - 1`` cycles after its evaluation; the general path's ``VA_EV`` test), and with
    ``sad > 1`` only where VC allocation gave the VC in this cycle (at switch allocation's
    update)."""
    if vad > 1:
        return False
    return sad == 1 or s.hv[iv, TOK] == tk + 1


@njit(cache=True, error_model="numpy", _nrt=False)
def kbase(t, vad, sad):
    """The first key of the heads VC allocation grants at its evaluation ``t`` (their place
    in switch allocation's queue, :func:`va_keys`): appended at its update ``u``, after route
    computation's items of ``u`` and, where switch allocation takes one cycle, before every
    item it puts back (:func:`low`); where it takes a batch (``sad > 1``) its queue only
    appends: ``u * KS + 2 KP``."""
    u = t + vad - 1
    return low(u) + KS + KP if sad == 1 else u * KS + 2 * KP


@njit(cache=True, error_model="numpy", _nrt=False)
def rc_keys(iv, e, c, ph, rd, vad, sad, s):
    """Stages of several cycles: the keys of the head at ``iv``, pushed into route
    computation at cycle ``c`` (``ph``: its place in that cycle, arrivals first), in the
    batch evaluated at ``e``: VC allocation's (and, speculative, switch allocation's) queue
    takes the batch at its update ``u = e + rd - 1`` in push order, before the items a
    one-cycle stage puts back (:func:`low`), or appended to a queue of batches (``u * KS +
    KP``)."""
    u = e + rd - 1
    f = (c - e + rd) * KC + ph  # (c > e - rd - 1: below KP)
    s.vkey[iv] = low(u) + f if vad == 1 else u * KS + KP + f
    s.skey[iv] = low(u) + f if sad == 1 else u * KS + KP + f


@njit(cache=True, error_model="numpy", _nrt=False)
def rekey(k, lst, key, base, hv, failed):
    """The ``k`` items of a stage's batch (input VCs ``lst[:k]``; ``failed``: only those
    without an output VC) put back at its update: appended in their order, keys ``base ..``
    (``lst`` sorted in place by ``key``)."""
    m = 0
    for i in range(k):
        iv = lst[i]
        if failed and hv[iv, OUT] >= 0:
            continue
        lst[m] = iv
        m += 1
    by_node(lst, 0, m, key)  # stable: equal keys keep the batch's order
    for i in range(m):
        key[lst[i]] = base + i


@njit(cache=True, error_model="numpy", _nrt=False)
def tail_keys(iv, t, e, i, rd, vad, sad, kd, s):
    """The keys of the next packet's head at ``iv``, its tail sent at ``t`` (the ``i``-th of
    the cycle's switch updates; ``e``: its route computation's batch): into VC allocation
    (``routing_delay = 0``) or route computation; ``kd``: a stage of several cycles
    (:func:`rc_keys`, VC allocation's queue of batches appending after its own update)."""
    if kd and rd:
        rc_keys(iv, e, t, KC // 2 + i, rd, vad, sad, s)
    elif kd:
        s.vkey[iv] = t * KS + (KP if vad == 1 else 3 * KP) + i
    else:
        s.vkey[iv] = t * KS + KP + i if rd == 0 else low(t + 1) + i
        if rd:
            s.skey[iv] = s.vkey[iv]
