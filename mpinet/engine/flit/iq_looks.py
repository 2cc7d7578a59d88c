"""The iq router's deadlock look while packets are injected (numba; docs/iq-router.md,
"Deadlocks"): the ideal model's looks (:mod:`~mpinet.engine.flit.deadlock_live`) on the iq
routers' state, inside the compiled blocks of cycles.

At the end of every :data:`~mpinet.engine.flit.deadlock_live.CHECK_EVERY`-th cycle while
packets are injected, paced by the cycles' moves as the ideal model paces its looks by its
work (:data:`~mpinet.engine.flit.deadlock_live.PACE`), each rank lists the input VCs of its
routers in the names of :mod:`mpinet.engine.waitfor` (buffer ids as the ideal model's, so its
report names the cycle):

* a **front** ``iv`` (the input VC's number, ``(node * nport + port) * V + v``) is the front
  flit of an input VC holding flits, listed when it is the same flit as at the previous look
  and it waits: *active* (its packet holds output VC ``o``) with no credit of ``o``, for the
  buffer ``B(o)`` at the next router (``(w * degree + q) * V + v``, as the ideal model names
  the VC buffer at ``w``'s input port ``q``); in *VC allocation* with every VC of its route's
  range held, for the allocation ``A(o) = NV + B(o)`` of the single VC, or with several for
  a choice ``2 NV + iv`` held by one pseudo-front ``NIV + iv * V + v`` per VC of the range,
  each waiting for that VC's ``A``. A hop into the terminal never waits for good (the
  terminal takes a flit a cycle and returns its credits), nor a head in route computation;
* it **holds** its input VC's buffer ``B`` (its slots free only when the front moves;
  *closed* when full), the ``A`` of the VC its packet holds (free again only when the
  packet's tail passes this router; closed); a VC whose tail has passed but, under
  ``wait_for_tail_credit``, waits for its last credit is held by the front of the next
  router's buffer (closed; its credits come back only as that front moves), listed by the
  front that waits for it.

A holder not listed (its front moved, or can) frees what it holds. So a dead front (waiting
for a closed resource whose holders are all dead) never moves, whatever the terminals
inject: the search of :func:`mpinet.engine.waitfor.dead_one_rank`, on the union of every
rank's listing, finds a deadlock, and only a real one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_router as ir
from mpinet.engine.flit import rank_looks as rl
from mpinet.engine.flit.deadlock_live import CHECK_EVERY, PACE
from mpinet.engine.waitfor import dead_one_rank

#: the block's codes beyond :mod:`~mpinet.engine.flit.iq_ranks`' (``status[0]``): a look
#: found dead fronts (or left its search to Python: the listings outgrew the gather); the
#: look's scan did not fit its scratch (Python grows it and the look runs again)
DEAD, NOFIT = 10, 11
#: ``lstat``' slots: input VCs a scan needs rows for, fronts listed at the last look, the
#: pacing budget, the looks searched in the blocks (the budget and searches where
#: :func:`~mpinet.engine.flit.rank_looks.search` writes them)
L_NEED, L_LISTED, L_BUDGET, L_SEARCHED, LSTAT = 0, 1, rl.S_BUDGET, rl.S_SEARCHED, 12
#: ``status[9]`` on several ranks: the look's scan due, its vote out, the listings' gather out
P_SCAN, P_VOTE, P_GATHER = 4, 5, 6


def scratch(m: int, nvc: int) -> tuple:
    """The scan's outputs for ``m`` input VCs holding flits: ``(fronts, waits, fpid, hf, hb,
    closed, cnt)``."""
    fronts = np.empty(m * (nvc + 1) + 1, np.int64)
    hf = np.empty(m * (2 * nvc + 2) + 1, np.int64)
    return (fronts, np.empty_like(fronts), np.empty_like(fronts), hf, np.empty_like(hf),
            np.empty(m * (nvc + 3) + 1, np.int64), np.zeros(3, np.int64))  # fmt: skip


def arrays(on: bool, own_iv: int, nvc: int, m: int = 64) -> tuple:
    """A look's arrays ``(on, snap, lstat, -, -, *scratch)``: the front flit of each of the
    rank's ``own_iv`` input VCs at the last look; the scan's outputs at the places
    :func:`~mpinet.engine.flit.rank_looks.gather` reads them."""
    z = np.zeros(0, np.int64)
    snap = np.full(own_iv if on else 0, -1, np.int64)
    return (on, snap, np.zeros(LSTAT, np.int64), z, z, *scratch(m if on else 0, nvc))


@njit(cache=True, error_model="numpy")
def pace(t, last, in_flight, moves, nnode, look):
    """Count cycle ``t``'s work in the budget: its ``moves`` (all ranks) and the packets in
    flight up to the routers' count (as the ideal model counts its active buffers: a stuck
    network still pays for its looks); whether its look is due."""
    lstat = look[2]
    lstat[L_BUDGET] += moves + min(in_flight, nnode)
    if not look[0] or t % CHECK_EVERY != 0 or t > last or in_flight <= 0:
        return False
    return lstat[L_BUDGET] >= 0


@njit(cache=True, error_model="numpy", _nrt=False)
def held(s, wi):
    """Word ``wi`` of the input VCs with an item in a stage (``m_rt | m_va | m_sa``): every
    input VC holding flits, whose front is routed, allocated a VC or bids for the switch,
    has one (:mod:`~mpinet.engine.flit.iq_moves`), so a look reads these words, not every
    VC's row (that walk was a sixth of `mesh88-lat`'s L1 misses, docs/iq-router.md); the
    bits come in index order, the order in which the active routers' rows were walked."""
    return s.m_rt[wi] | s.m_va[wi] | s.m_sa[wi]


@njit(cache=True, error_model="numpy")
def fits(prm, s, look):
    """Whether the scratch has room for the scan of the rank's input VCs holding flits (their
    count in ``lstat[L_NEED]``)."""
    m = 0
    for wi in range(il.words((prm.hi - prm.lo) * prm.nport * prm.nvc)):
        word = held(s, wi)
        while word:
            iv = (wi << 6) + il.low(word)
            word &= word - np.uint64(1)
            if s.hv[iv, il.IBN] > 0:
                m += 1
    look[2][L_NEED] = m
    nvc = prm.nvc
    return (m * (nvc + 1) < look[5].shape[0] and m * (2 * nvc + 2) < look[8].shape[0]
            and m * (nvc + 3) < look[10].shape[0])  # fmt: skip


@njit(cache=True, error_model="numpy", _nrt=False)
def _vc(s, n, op, v, deg, nvc):
    """``B`` of output VC ``v`` of port ``op`` at the rank's router ``n`` (numbered from its
    first): the buffer it feeds."""
    link = n * deg + op
    return (s.nbt[link] * deg + s.rev[link]) * nvc + v


@njit(cache=True, error_model="numpy")
def scan(prm, s, snap, fronts, waits, fpid, hf, hb, closed, cnt):
    """The rank's fronts, waits, holds and closed resources (see the module docstring);
    ``cnt`` = (fronts, holds, closed)."""
    nport, nvc, deg, bsz, fl = prm.nport, prm.nvc, prm.deg, prm.bsz, prm.fl
    nv = prm.nnode * deg * nvc
    niv = prm.nnode * nport * nvc
    g0 = prm.lo * nport * nvc  # the rank's first input VC (its arrays' 0)
    per = nport * nvc
    nf = nh = nc = 0
    for wi in range(il.words((prm.hi - prm.lo) * per)):
        word = held(s, wi)
        while word:
            iv = (wi << 6) + il.low(word)
            word &= word - np.uint64(1)
            if s.hv[iv, il.IBN] <= 0:
                continue
            n = iv // per  # (a look is rare: a division a VC holding flits)
            gn = n + prm.lo  # its global id
            base = n * per
            j = iv - base
            f = s.ib[iv * bsz + s.hv[iv, il.IBH]]
            pid = s.pk_pid[f // fl]
            key = pid * fl + f % fl
            same = snap[iv] == key
            snap[iv] = key
            if not same:
                continue  # moved since the last look: counts as able to move
            p, v = j // nvc, j % nvc
            st = s.hv[iv, il.VST]
            op, lo_v, hi_v, wait = -1, 0, 0, -1
            if st == ir.ACTIVE:
                op = s.hv[iv, il.VOP]
                if 0 <= op < deg and s.bs_cred[base + op * nvc + s.hv[iv, il.VOV]] <= 0:
                    wait = _vc(s, gn - prm.lo, op, s.hv[iv, il.VOV], deg, nvc)
            elif st == ir.VC_ALLOC:
                op, lo_v, hi_v = s.va[iv, il.VRP], s.va[iv, il.VLO], s.va[iv, il.VHI]
                if 0 <= op < deg and lo_v < hi_v:
                    wait = 2 * nv + g0 + iv  # a choice; one VC: its allocation
                    if hi_v - lo_v == 1:
                        wait = nv + _vc(s, gn - prm.lo, op, lo_v, deg, nvc)
                    for ov in range(lo_v, hi_v):
                        if s.bs_use[base + op * nvc + ov] == 0:
                            wait = -1  # a free VC: its allocation comes
            if wait < 0:
                continue
            fronts[nf], waits[nf], fpid[nf] = g0 + iv, wait, pid
            nf += 1
            if p < deg:  # its buffer's slots free only when it moves
                b = (gn * deg + p) * nvc + v
                hf[nh], hb[nh] = g0 + iv, b
                nh += 1
                if s.hv[iv, il.IBN] >= bsz:
                    closed[nc] = b
                    nc += 1
            if st == ir.ACTIVE:  # the VC its packet holds, until the tail passes here
                hf[nh], hb[nh] = g0 + iv, nv + wait
                nh += 1
                closed[nc] = nv + wait
                nc += 1
                continue
            if hi_v - lo_v > 1:  # the choice, held by one pseudo-front per VC of the range
                closed[nc] = wait
                nc += 1
            for ov in range(lo_v, hi_v):
                a_id = nv + _vc(s, gn - prm.lo, op, ov, deg, nvc)
                if hi_v - lo_v > 1:
                    pf = niv + (g0 + iv) * nvc + ov
                    fronts[nf], waits[nf], fpid[nf] = pf, a_id, -1
                    nf += 1
                    hf[nh], hb[nh] = pf, wait
                    nh += 1
                if s.bs_tail[base + op * nvc + ov]:  # held for its last credit: the next
                    link = (gn - prm.lo) * deg + op  # router's buffer drains as its front moves
                    hf[nh] = (s.nbt[link] * nport + s.rev[link]) * nvc + ov
                    hb[nh] = a_id
                    nh += 1
                    closed[nc] = a_id
                    nc += 1
    cnt[0], cnt[1], cnt[2] = nf, nh, nc


# _nrt=True: compiled with reference counting (its search allocates) though called from
# run_block, which has none (numba's callees inherit the flag)
@njit(cache=True, error_model="numpy", _nrt=True)
def one_rank(prm, s, look):
    """The look on one rank: 0 (no front dead), :data:`DEAD` or :data:`NOFIT`."""
    _, snap, lstat, _, _, fronts, waits, fpid, hf, hb, closed, cnt = look
    if not fits(prm, s, look):
        return NOFIT
    scan(prm, s, snap, fronts, waits, fpid, hf, hb, closed, cnt)
    nf, nh, nc = cnt[0], cnt[1], cnt[2]
    lstat[L_LISTED] = nf
    if nf == 0:
        return 0
    if dead_one_rank(fronts[:nf], waits[:nf], hf[:nh], hb[:nh], closed[:nc]).any():
        return DEAD
    lstat[L_BUDGET] = -PACE * nf
    lstat[L_SEARCHED] += 1
    return 0


@njit(cache=True, error_model="numpy")
def ranks_look(fns, hnd, prm, s, net, look, status):
    """The look on several ranks from phase ``status[9]`` on: this rank's scan, every rank's
    counts in one ``MPI_Iallgather`` (:func:`~mpinet.engine.flit.rank_looks.vote`), the
    listings gathered and searched on their union (:func:`~.rank_looks.gather`,
    :func:`~.rank_looks.search`) when some rank listed fronts. Returns 0, :data:`DEAD`,
    :data:`NOFIT` or :data:`~.rank_looks.WAIT` (call again: the phase is kept)."""
    _, snap, lstat, _, _, fronts, waits, fpid, hf, hb, closed, cnt = look
    while True:
        if status[9] == P_SCAN:
            if not fits(prm, s, look):
                return NOFIT
            scan(prm, s, snap, fronts, waits, fpid, hf, hb, closed, cnt)
            nf, nh, nc = cnt[0], cnt[1], cnt[2]
            big = 2 if 2 * nf + 2 * nh + nc > net.gsend.shape[0] else 0
            rl.vote(fns, hnd, net, 0, 0, nf, nh, nc, big)
            status[9] = P_VOTE
        if not rl.wait(fns, net, 1):
            return rl.WAIT
        if status[9] == P_GATHER:
            status[9] = 0
            return DEAD if rl.search(net, lstat) == rl.LOOKED else 0
        _, _, listed, _, big = rl.tally(net)
        lstat[L_LISTED] = listed
        status[9] = 0
        if big:
            return DEAD  # Python gathers and searches (its buffers then grown)
        if listed == 0:
            return 0
        rl.gather(fns, hnd, net, look)
        status[9] = P_GATHER
