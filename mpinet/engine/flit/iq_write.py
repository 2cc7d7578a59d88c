"""The iq model's step 4 (numba, :mod:`~mpinet.engine.flit.iq_step`'s order): each router
sends one flit per output queue onto its channel and one credit message per input port back,
visiting the non-empty queues only (the bit sets ``obm``, ``cqm``); a flit or credit for a node
of the rank lands in its channel's slot and sets the arrival's bit (``fm``, ``cm``, ``tm``)
for :func:`~mpinet.engine.flit.iq_step.read_phase`, one for another rank's node goes in the
exchange (:mod:`~mpinet.engine.flit.iq_ranks`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il


@njit(cache=True, error_model="numpy", _nrt=False)
def write_phase(t, win, prm, s, hop, nh):
    """:func:`write_in` as a kernel of its own (:mod:`.iq_ranks`' block, compiled with
    reference counting, calls it)."""
    return write_in(t, win, prm, s, hop, nh)


@njit(cache=True, error_model="numpy", _nrt=False)  # called, not inlined (iq_lean_mode)
def write_in(t, win, prm, s, hop, nh):
    """Step 4: one flit per output queue onto its channel (link loads and hop rows counted
    on the links), one credit message per input port back; returns ``(link flits, hop rows'
    count)``."""
    nport, deg, sl, obs, cqs = prm.nport, prm.deg, prm.sl, prm.obs, prm.cqs
    work, inact, act, nact = s.work, s.inact, s.act, s.nact
    ob, obh, obn, cq, cqh, cqn = s.ob, s.obh, s.obn, s.cq, s.cqh, s.cqn
    t2, tl = t % 2, t % sl
    own = prm.hi - prm.lo
    w0, w1 = il.words(own), il.words(own * nport)
    flits = 0
    for wi in range(w1):
        word = s.obm[wi]
        while word:
            c = (wi << 6) + il.low(word)
            word &= word - np.uint64(1)
            n = il.div(c, nport, prm.mport, prm.lport)
            o = c - n * nport
            g = n + prm.lo  # its global id: links, hop rows
            y = c * obs + obh[c]
            fv = ob[y]  # flit and VC in one word, as the channels carry them
            f, v = fv >> 6, fv & 63
            obh[c] = il.wrap(obh[c] + 1, obs)
            obn[c] -= 1
            if obn[c] == 0:
                il.unmark(s.obm, c)
            work[n] -= 1
            if o < deg:
                w = s.nbt[n * deg + o]
                key = w * deg + s.rev[n * deg + o]  # the input port it reaches
                here = prm.lo <= w < prm.hi
                if here:
                    x = (key - prm.lo * deg) * sl + tl
                    s.fc[x] = fv
                    il.mark(s.fm, ((tl * w1) << 6) + key - prm.lo * deg + w - prm.lo)
                    il.activate(w - prm.lo, work, inact, act, nact, s.actb)
                flits += 1
                if win:
                    s.load[n * deg + o] += 1
                pk = il.div(f, prm.fl, prm.mfl, prm.lfl)
                head = f == pk * prm.fl
                if prm.record_hops and head:
                    hop[nh, 0], hop[nh, 1], hop[nh, 2] = t, s.pk_pid[pk], g
                    hop[nh, 3], hop[nh, 4] = w, o
                    nh += 1
                if head:
                    s.pk_hops[pk] += 1
                if not here:
                    _away(key, f, v, prm.fl, s)
            else:
                x = n * 2 + t2
                s.ec[x], s.ecv[x] = f, v
                il.mark(s.tm, ((t2 * w0) << 6) + n)
                work[n] += 1
    for wi in range(w1 if prm.dx else 0):  # the queues switch allocation filled in this
        if s.obp[wi]:  # cycle (``dx``): sent from the next cycle on, as the crossbar of one
            s.obm[wi] |= s.obp[wi]  # cycle hands them on
            s.obp[wi] = 0
    for wi in range(w1):
        word = s.cqm[wi]
        while word:
            c = (wi << 6) + il.low(word)
            word &= word - np.uint64(1)
            n = il.div(c, nport, prm.mport, prm.lport)
            p = c - n * nport
            m = cq[c * cqs + cqh[c]]
            cqh[c] = il.wrap(cqh[c] + 1, cqs)
            cqn[c] -= 1
            if cqn[c] == 0:
                il.unmark(s.cqm, c)
            work[n] -= 1
            send_credit(n, p, m, t2, tl, prm, s)
    return flits, nh


@njit(cache=True, error_model="numpy", _nrt=False)
def send_credit(n, p, m, t2, tl, prm, s):
    """Router ``n``'s credit message ``m`` (a bit per VC) for input port ``p`` onto its
    channel (cycle slot ``tl``, parity ``t2``): to the upstream router's output port, a
    terminal, or another rank's node (the exchange)."""
    deg, sl = prm.deg, prm.sl
    if p < deg:
        w = s.nbt[n * deg + p]
        key = w * deg + s.rev[n * deg + p]  # the output port they return to
        if prm.lo <= w < prm.hi:
            w1 = il.words((prm.hi - prm.lo) * prm.nport)
            s.cr[(key - prm.lo * deg) * sl + tl] = m
            il.mark(s.cm, ((tl * w1) << 6) + key - prm.lo * deg + w - prm.lo)
            il.activate(w - prm.lo, s.work, s.inact, s.act, s.nact, s.actb)
        else:  # to another rank: in the exchange
            i = s.cn[0]
            s.co[i, 0], s.co[i, 1] = key, np.int64(m)
            s.cn[0] = i + 1
    else:
        s.tcr[n * 2 + t2] = m
        il.mark(s.tm, ((t2 * il.words(prm.hi - prm.lo)) << 6) + n)
        s.work[n] += 1


#: an exchange row's columns: link, VC, flit, head flag, the packet's record (4-10), its
#: header from ROW on
ROW = 11


@njit(cache=True, error_model="numpy", _nrt=False)
def put_record(m, a, s, pk):
    """Packet ``pk``'s record into the exchange row at ``m[a]`` (columns 4-10 and the header
    from :data:`ROW`), as a head that leaves the rank carries it; both iq paths'
    (``s``: either path's arrays)."""
    m[a + 4], m[a + 5], m[a + 6], m[a + 7] = s.pk_pid[pk], s.pk_src[pk], s.pk_dst[pk], s.pk_inj[pk]
    m[a + 8], m[a + 9], m[a + 10] = s.pk_adm[pk], s.pk_hops[pk], s.pk_state[pk]
    for c in range(s.pk_hdr.shape[1]):
        m[a + ROW + c] = s.pk_hdr[pk, c]


@njit(cache=True, error_model="numpy", _nrt=False)
def take_record(m, a, s):
    """A head's packet record from the exchange row at ``m[a]`` into a free slot of ``s``
    (:func:`put_record`'s columns); returns the slot."""
    s.pk_nfree[0] -= 1
    pk = s.pk_free[s.pk_nfree[0]]
    s.pk_pid[pk], s.pk_src[pk], s.pk_dst[pk] = m[a + 4], m[a + 5], m[a + 6]
    s.pk_inj[pk], s.pk_adm[pk], s.pk_hops[pk] = m[a + 7], m[a + 8], m[a + 9]
    s.pk_state[pk], s.pk_next[pk] = m[a + 10], -1
    for c in range(s.pk_hdr.shape[1]):
        s.pk_hdr[pk, c] = m[a + ROW + c]
    return pk


@njit(cache=True, error_model="numpy", _nrt=False)
def _away(link, f, v, fl, s):
    """Flit ``f`` leaves the rank for input port ``link`` (``node * degree + port``) of
    another rank's node, VC ``v``: a row of the exchange (a head carries its packet's
    record); the packet's slot is free once its tail left."""
    i = s.wn[0]
    s.wn[0] = i + 1
    pk, k = f // fl, f % fl
    row = s.wo[i]
    row[0], row[1], row[2], row[3] = link, v, k, k == 0
    if k == 0:
        put_record(row, 0, s, pk)
        s.pk_away[pk] = 1
    if k == fl - 1:
        s.pk_free[s.pk_nfree[0]] = pk
        s.pk_nfree[0] += 1
