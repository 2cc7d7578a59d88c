"""The deadlock look while injecting on several ranks, inside the compiled block of steps
(:func:`~mpinet.engine.flit.rank_loop.run_block`), and the wait for the block's requests.

At a look's step (every :data:`~mpinet.engine.flit.deadlock_live.CHECK_EVERY` steps, paced
as :meth:`~mpinet.engine.flit.deadlock_live.LiveCheck.due` paces it) each rank scans its
fronts (:func:`~mpinet.engine.flit.deadlock_live._scan`) and votes in one
``MPI_Iallgather`` of :data:`VOTE` words: its active buffers (the pacing's work), an error,
the fronts, holds and closed buffers its scan listed, and 1 if its scan did not fit the
block's scratch. Where the pacing budget is negative the vote runs twice (the active
buffers first: the look is due only if their sum brings it to 0). The vote cannot ride in
the next step's messages, as the step's counters do: those leave after that step's moves,
and the search is of the state at the look.

When some rank listed fronts, every rank's listing is gathered (one ``MPI_Iallgatherv``
into :attr:`Net.gbuf`, each rank's words at its place) and the one-rank pass of
:mod:`mpinet.engine.waitfor` runs on their union on every rank, as
:meth:`~mpinet.engine.flit.deadlock_live.LiveCheck._search_union` does in Python: exact,
since the dead set depends only on the union. The block goes on when it finds no dead
front (the pacing budget set as the Python search sets it); it returns to Python
(:data:`LOOKED`) only for a dead set (the report: Python's gathered search finds the same
set and names the cycle), a scan that did not fit, or a union larger than the gather's
buffer. Why: on ms:3,2 at L = 16 nearly every look lists fronts and none is dead; a return
to Python for each (the block's closing reduction, a polled barrier, a pickled
``allgather``, Python's search) cost more than the 16 steps between looks on 2 ranks
(docs/performance.md, "The compiled steps on every port model and several ranks").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import chunk
from mpinet.engine.flit import deadlock_live as dl
from mpinet.engine.waitfor import dead_one_rank

#: :func:`look_votes`' code beyond :mod:`~mpinet.engine.flit.chunk`'s: waiting for messages,
#: a rank failed, a look whose search Python makes (see :mod:`~mpinet.engine.flit.rank_loop`)
WAIT, FAILED, LOOKED = 7, 8, 9
#: ``status``' slots: the pacing budget of the deadlock look; 1 where this rank's scan did
#: not fit the look's scratch (Python scans); the looks searched inside the block
S_BUDGET, S_NOFIT, S_SEARCHED = 9, 10, 11
#: ``status[6]``: between steps, a look's votes to post and out (the active buffers first;
#: the scan's), the listings' gather out
P_STEP, P_WORK, P_SCAN, P_WORK_OUT, P_SCAN_OUT, P_GATHER_OUT = 0, 3, 4, 13, 14, 15
#: a rank's vote: active buffers, error, fronts, holds, closed buffers listed, scan unfit (or
#: its listing larger than ``net.gsend``), the words ``net.gbuf`` has room for
V_WORK, V_BAD, V_NF, V_NH, V_NC, V_NOFIT, V_ROOM, VOTE = range(8)


@njit(cache=True, _nrt=False)
def wait(fns, net, n):
    """Test the ``n`` requests until all completed (True) or ``net.spin`` seconds passed."""
    testall, wtime, sched_yield = fns[2], fns[4], fns[5]
    reqs, flag, stat = net.reqs, net.flag, net.stat
    t0 = wtime()
    spins = 0
    while True:
        testall(n, reqs.ctypes.data, flag.ctypes.data, stat.ctypes.data)
        if flag[0]:
            net.waited[0] += wtime() - t0
            return True
        spins += 1
        if spins > 32 or net.spin <= 0:  # a rank sharing its core with the one it waits for
            sched_yield()  # lets that one run
            if wtime() - t0 > net.spin:
                net.waited[0] += wtime() - t0
                return False


@njit(cache=True, error_model="numpy")
def vote(fns, hnd, net, work, bad, nf, nh, nc, nofit):
    """Post a deadlock look's vote (every rank's :data:`VOTE` words to every rank)."""
    comm, i64, _ = hnd
    v = net.vote
    v[V_WORK], v[V_BAD], v[V_NF], v[V_NH], v[V_NC], v[V_NOFIT] = work, bad, nf, nh, nc, nofit
    v[V_ROOM] = net.gbuf.shape[0]
    net.sent[0] += 8 * VOTE
    fns[6](v.ctypes.data, VOTE, i64, net.votes.ctypes.data, VOTE, i64, comm,
           net.reqs.ctypes.data)  # fmt: skip


@njit(cache=True, error_model="numpy")
def tally(net):
    """The votes summed: ``(work, errors, fronts listed, words of the listings, unfit)``,
    unfit counting a union larger than the gather's buffer on some rank."""
    work = bad = listed = words = nofit = 0
    room = net.votes[V_ROOM]
    votes = net.votes
    for r in range(votes.shape[0] // VOTE):
        v = votes[r * VOTE : (r + 1) * VOTE]
        work += v[V_WORK]
        bad += v[V_BAD]
        listed += v[V_NF]
        words += 2 * v[V_NF] + 2 * v[V_NH] + v[V_NC]
        nofit += v[V_NOFIT]
        room = min(room, v[V_ROOM])
    return work, bad, listed, words, nofit + (1 if listed and words > room else 0)


@njit(cache=True, error_model="numpy")
def gather(fns, hnd, net, look):
    """Post the gather of every rank's listing (fronts, waits, hold fronts, hold buffers,
    closed) into ``net.gbuf``, rank after rank."""
    comm, i64, _ = hnd
    fronts, waits, hf, hb, closed, scnt = look[5], look[6], look[8], look[9], look[10], look[11]
    nf, nh, nc = scnt[0], scnt[1], scnt[2]
    s = net.gsend
    s[:nf] = fronts[:nf]
    s[nf : 2 * nf] = waits[:nf]
    a = 2 * nf
    s[a : a + nh] = hf[:nh]
    s[a + nh : a + 2 * nh] = hb[:nh]
    a += 2 * nh
    s[a : a + nc] = closed[:nc]
    a += nc
    at = 0
    for r in range(net.gcnt.shape[0]):
        v = net.votes[r * VOTE : (r + 1) * VOTE]
        net.gcnt[r], net.gdsp[r] = 2 * v[V_NF] + 2 * v[V_NH] + v[V_NC], at
        at += net.gcnt[r]
    net.sent[0] += 8 * a
    fns[7](s.ctypes.data, a, i64, net.gbuf.ctypes.data, net.gcnt.ctypes.data,
           net.gdsp.ctypes.data, i64, comm, net.reqs.ctypes.data)  # fmt: skip


@njit(cache=True, error_model="numpy")
def search(net, status):
    """The one-rank pass on the gathered union: :data:`LOOKED` if some front is dead, else
    ``chunk.DONE`` with the budget set as the Python search sets it."""
    votes, g = net.votes, net.gbuf
    ranks = votes.shape[0] // VOTE
    nf = nh = nc = 0
    for r in range(ranks):
        nf += votes[r * VOTE + V_NF]
        nh += votes[r * VOTE + V_NH]
        nc += votes[r * VOTE + V_NC]
    fr, wt = np.empty(nf, np.int64), np.empty(nf, np.int64)
    hf, hb, cl = np.empty(nh, np.int64), np.empty(nh, np.int64), np.empty(nc, np.int64)
    jf = jh = jc = 0
    for r in range(ranks):  # in rank order, as the Python search concatenates them
        a, f = net.gdsp[r], votes[r * VOTE + V_NF]
        h, c = votes[r * VOTE + V_NH], votes[r * VOTE + V_NC]
        fr[jf : jf + f] = g[a : a + f]
        wt[jf : jf + f] = g[a + f : a + 2 * f]
        a += 2 * f
        hf[jh : jh + h] = g[a : a + h]
        hb[jh : jh + h] = g[a + h : a + 2 * h]
        a += 2 * h
        cl[jc : jc + c] = g[a : a + c]
        jf, jh, jc = jf + f, jh + h, jc + c
    if dead_one_rank(fr, wt, hf, hb, cl).any():
        return LOOKED
    status[S_BUDGET] = -dl.PACE * nf
    status[S_SEARCHED] += 1
    return chunk.DONE


@njit(cache=True, error_model="numpy")
def look_votes(fns, hnd, kr, prm, segs, pkts, links, bufs, net, rows, status, err, look):
    """The deadlock look of step ``t`` (row ``kr``) from phase ``status[6]`` on (see the
    module docstring); returns ``chunk.DONE`` (no fronts listed, none dead, or the look not
    due), :data:`LOOKED`, :data:`FAILED` or :data:`WAIT` (call again: the phase is kept)."""
    _, rev, nv, nl, snap, fronts, waits, fpid, hf, hb, closed, scnt = look
    lag = net.lag
    bad = 1 if err[0] != 0 else 0
    while True:
        work = lag[2] if lag[0] else 0  # the step's active buffers, until a vote counted them
        if status[6] == P_WORK:
            vote(fns, hnd, net, work, bad, 0, 0, 0, 0)
            status[6] = P_WORK_OUT
        if status[6] == P_SCAN:
            nf = nh = nc = nofit = 0
            if bad == 0:
                fit = min(fronts.shape[0] // (prm.nvc + 1), hf.shape[0] // (prm.nvc + 2),
                          closed.shape[0] // 3)  # fmt: skip
                if bufs.nact[0] + bufs.nact[2] >= fit:  # the listed and the parked
                    nofit = 1
                else:
                    dl._scan(prm, segs, pkts, links, bufs, rev, nv, nl, snap, fronts, waits,
                             fpid, hf, hb, closed, scnt)  # fmt: skip
                    nf, nh, nc = scnt[0], scnt[1], scnt[2]
                    if 2 * nf + 2 * nh + nc > net.gsend.shape[0]:
                        nofit = 2  # scanned, too large to gather here
            status[S_NOFIT] = 1 if nofit == 1 else 0  # Python scans
            vote(fns, hnd, net, work, bad, nf, nh, nc, nofit)
            status[6] = P_SCAN_OUT
        if not wait(fns, net, 1):
            return WAIT
        if status[6] == P_GATHER_OUT:
            status[6] = P_STEP
            return search(net, status)
        scan = status[6] == P_SCAN_OUT
        t_work, t_bad, listed, words, nofit = tally(net)
        if lag[0]:  # every rank voted its active buffers: the step's work is counted
            status[S_BUDGET] += t_work
            rows[kr, chunk.R_WORK] = t_work
            lag[0] = 0
        status[6] = P_STEP
        if t_bad:
            return FAILED
        if scan:
            if nofit:
                return LOOKED  # Python scans, or gathers
            if listed == 0:
                return chunk.DONE
            gather(fns, hnd, net, look)
            status[6] = P_GATHER_OUT
            continue
        if status[S_BUDGET] < 0:
            return chunk.DONE
        status[6] = P_SCAN  # the look is due after all
