"""The lean iq path's exchange on several ranks, a cycle's flits and credits bound for
another rank's routers taken out of the rings into the messages, and the partners' put in
(docs/iq-router.md, "Session 19: the lean path on several ranks"; the loop that calls them
and the messages' layout: :mod:`~mpinet.engine.flit.iq_lean_ranks`, whose doc says how a
flit and a credit cross and when they are due).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lean_io as lio
from mpinet.engine.flit import iq_lean_state as ils
from mpinet.engine.flit import iq_ranks
from mpinet.engine.flit import ranks as rk
from mpinet.engine.flit.iq_write import put_record, take_record

ROW_HEAD = iq_ranks.ROW_HEAD


@njit(cache=True, error_model="numpy", _nrt=False)
def owner(ex, node):
    return ex.slot[np.searchsorted(ex.owner, node, side="right") - 1]


@njit(cache=True, error_model="numpy", _nrt=False)
def now(s):
    """1 where a cycle's messages carry the flits sent in it, 0 where those sent in the next:
    under internal speedup a flit may leave in the cycle of its grant (``iq_lean_speedup``),
    so it is known only at that cycle's end (``channel_latency >= 1``: still in time)."""
    return 1 if s.spg[1] > 1 else 0


@njit(cache=True, error_model="numpy", _nrt=False)
def flits_out(t, prm, s, ex, away):
    """Cycle ``t``'s flits and credits bound for other ranks out of the rings into the
    messages (rows, then one word a credit: the global output VC); returns the flits.
    Ring slot ``t + channel_latency + 2`` holds every flit sent at ``t + 1``: with output
    speedup also those granted earlier and queued (all granted by ``t``). ``away``: 1 for a
    slot whose head left (another rank lists the packet live) until its tail leaves."""
    npt, nv, fl = prm.nport, prm.nvc, prm.fl
    nloc, cs = prm.nnode * npt, s.cred.size
    nn = ex.send.shape[0]
    width = ex.width
    for j in range(nn):
        ex.send[j, rk.H_ROWS], ex.send[j, rk.H_CRED], ex.send[j, rk.H_HEADS] = 0, 0, 0
    nar, nkr = s.cn.size, s.kn.size
    cap, capk = s.ck.size // nar, s.kk.size // nkr
    sd = (t + prm.lat + 2 - now(s)) % nar
    kept, sent = 0, 0
    for i in range(s.cn[sd]):
        key, code = s.ck[sd * cap + i], s.cc[sd * cap + i]
        ip = key >> 6
        if ip < nloc:
            s.ck[sd * cap + kept], s.cc[sd * cap + kept] = key, code
            kept += 1
            continue
        g = ip - nloc  # the global input port: node * nport + port
        j = owner(ex, g // npt)
        a = rk.HEADER + ex.send[j, rk.H_ROWS] * width
        ex.send[j, rk.H_ROWS] += 1
        pk, k = code >> ils.FS, code & lio.KM
        ex.send[j, a], ex.send[j, a + 1], ex.send[j, a + 2] = g, key & 63, k
        ex.send[j, a + ROW_HEAD] = 1 if k == 0 else 0
        if k == 0:  # a head carries its packet's record
            ex.send[j, rk.H_HEADS] += 1
            put_record(ex.send[j], a, s, pk)
            away[pk] = 1
        if k == fl - 1:  # the packet's last flit here: its slot free
            away[pk] = 0
            s.pk_free[s.pk_nfree[0]] = pk
            s.pk_nfree[0] += 1
        sent += 1
    s.cn[sd] = kept
    for j in range(nn):
        ex.nsend[j] = rk.HEADER + ex.send[j, rk.H_ROWS] * width
    x = (t + prm.lat + 1 + prm.cd) % nkr  # a link's credits (a terminal's stay here)
    kept = 0
    for i in range(s.kn[x]):
        e = s.kk[x * capk + i]
        if e < cs:
            s.kk[x * capk + kept] = e
            kept += 1
            continue
        g = e - cs  # the global output VC: (node * nport + port) * nvc + v
        j = owner(ex, g // (npt * nv))
        ex.send[j, ex.nsend[j]] = g
        ex.nsend[j] += 1
        ex.send[j, rk.H_CRED] += 1
    s.kn[x] = kept
    return sent


@njit(cache=True, error_model="numpy", _nrt=False)
def flits_in(t, prm, s, ex, rmap):
    """The partners' flits and credits of cycle ``t`` into this rank's rings, due as on one
    rank (a head takes a packet slot; the flits after it on its VC are that packet's)."""
    npt, nv, lo = prm.nport, prm.nvc, prm.lo
    nar, nkr = s.cn.size, s.kn.size
    cap, capk = s.ck.size // nar, s.kk.size // nkr
    sd = (t + prm.lat + 2 - now(s)) % nar
    x = (t + prm.lat + 1 + prm.cd) % nkr
    width = ex.width
    for j in range(ex.recv.shape[0]):
        m = ex.recv[j]
        nr = m[rk.H_ROWS]
        for i in range(nr):
            a = rk.HEADER + i * width
            ip, v, k = m[a] - lo * npt, m[a + 1], m[a + 2]
            iv = ip * nv + v
            if m[a + ROW_HEAD]:
                rmap[iv] = take_record(m, a, s)
            y = sd * cap + s.cn[sd]
            s.ck[y], s.cc[y] = ip << 6 | v, rmap[iv] << ils.FS | k
            s.cn[sd] += 1
        a = rk.HEADER + nr * width
        for c in range(m[rk.H_CRED]):
            s.kk[x * capk + s.kn[x]] = m[a + c] - lo * npt * nv
            s.kn[x] += 1
