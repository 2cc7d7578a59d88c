"""A lean iq cycle's inputs (numba, compiled apart and called from
:func:`~mpinet.engine.flit.iq_lean.run_block`, as :mod:`~.iq_lean_mode` says why;
docs/iq-router.md, "Session 18: the lean path"): the flits due into the routers' input VCs,
the terminals' injections, and the credits due under ``wait_for_tail_credit``, in the order
of BookSim's ``TrafficManager::_Step``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit.iq_lean_spec import KS, by_node, low, rank, rc_keys
from mpinet.engine.flit.iq_lean_state import CNT, FS, HD, RP, TOK
from mpinet.prefetch import prefetch
from mpinet.routing import compiled

U1 = np.uint64(1)
KM = (1 << FS) - 1  # a flit word's index bits
AHEAD = 8  # arrivals fetched ahead


@njit(cache=True, error_model="numpy", _nrt=False)
def batch(stb, n, k, a, d):
    """The cycle stage ``k`` of router ``n``, of ``d > 1`` cycles, evaluates an item ready
    from cycle ``a`` (cycles in order): BookSim's stage queue takes a batch, then nothing new
    until its update ``d - 1`` cycles on (``iq_router``'s ``bt``). The item joins the batch
    not yet evaluated, or the next one, at ``a`` or when the one in flight is done."""
    e = stb[n, k]
    f = e + d if a < e + d else a  # (selects: the branches on a, data, were mispredicted)
    e = e if a <= e else f
    stb[n, k] = e
    return e


@njit(cache=True, error_model="numpy", _nrt=False)
def wait(tok, word, bit, s):
    """A head waiting until cycle ``tok`` (``TOK``, at least two cycles on) out of pass 1:
    bit ``bit`` of ``wm[word]`` (the input VC's bit of ``vm``, or of ``pm`` where a
    router's VCs fit a word) set, and cleared by :func:`due` at ``tok``."""
    s.wm[word] |= U1 << np.uint64(bit)
    x = tok & (s.wn.size - 1)
    s.wq[x, s.wn[x]] = word << 6 | bit  # (a row a cycle: no division for the row's start)
    s.wn[x] += 1


@njit(cache=True, error_model="numpy", _nrt=False)
def due(t, s):
    """The heads :func:`wait` took out of pass 1 until cycle ``t``, back in it."""
    x = t & (s.wn.size - 1)
    for i in range(s.wn[x]):
        w = s.wq[x, i]
        s.wm[w >> 6] &= ~(U1 << np.uint64(w & 63))
    s.wn[x] = 0


@njit(cache=True, error_model="numpy", _nrt=False)
def keep(nr, n, nin, so, rin, rout, rlab, grant, smap, npt, osp, s):
    """Switch allocation of ``sw_alloc_delay > 1`` at router ``n``: the grants of the ``nr``
    rows evaluated now kept for the batch's update (``sdw``: crossbar input, output port,
    crossbar output, VC), the rows' bids cleared. Returns 0: nothing moves now."""
    k = 0
    for y in range(nr):
        ei, op = rin[so + y], rout[so + y]
        if osp > 1:  # (rout the crossbar output, rop its port)
            op = s.rop[y]
        smap[ei * npt + op] = -1
        if grant[y]:
            s.sdw[n * nin + k] = ei << 40 | op << 24 | rout[so + y] << 8 | rlab[y]
            k += 1
    s.sdn[n] = k
    return 0


@njit(cache=True, error_model="numpy", _nrt=False)
def unkeep(n, nin, so, rin, rout, rlab, grant, osp, s):
    """The grants :func:`keep` kept at router ``n`` back in the rows, granted, at the batch's
    update; returns their count."""
    k = s.sdn[n]
    for y in range(k):
        w = s.sdw[n * nin + y]
        rin[so + y], rout[so + y], rlab[y], grant[y] = w >> 40, (w >> 8) & 0xFFFF, w & 0xFF, 1
        if osp > 1:
            s.rop[y] = (w >> 24) & 0xFFFF
    s.sdn[n] = 0
    return k


@njit(cache=True, error_model="numpy", _nrt=False)
def arrivals(t, tb, s, prm, rule, rd, far, osp, flat, rdp, wheel, kd):
    """The flits due at cycle ``t`` into their input VCs; a head at a VC's front may go to
    VC allocation at ``tb + rd`` (``tb``: ``t``, or under internal speedup the cycle's first
    internal step, ``TOK``'s unit there; route computation; ``routing_delay = 0``: lookahead, in
    this cycle; ``rdp``: ``rd > 1``, at ``rd`` after its batch's cycle), its route's table
    entry fetched now (``anynet-min``'s N x N table is 25 MB on ms:3,2: a miss a
    packet-hop where read at once). ``flat``: a router's VCs fit a word, ``pm`` holds them
    (bit ``port * nvc + v``), not its ports, and ``vm`` is not kept. ``wheel``: a head due
    in a later cycle out of pass 1 until then (:func:`wait`). ``kd``: output speedup's keys
    of stages of several cycles (``iq_lean_spec.rc_keys``). Returns the count."""
    nv, bsz, npt = prm.nvc, prm.bsz, prm.nport
    hv, buf = s.hv, s.buf
    nar = s.cn.size
    cap = s.ck.size // nar
    k = t % nar
    cnt = s.cn[k]
    for i in range(cnt):
        key, code = s.ck[k * cap + i], s.cc[k * cap + i]
        if far and i + AHEAD < cnt:  # the input VC's row and ring a few arrivals on (at random
            j = s.ck[k * cap + i + AHEAD]  # over megabytes on ms:3,2: a miss each)
            j = (j >> 6) * nv + (j & 63)
            prefetch(hv, j)  # its row
            prefetch(buf, j * bsz)
        ip, v = key >> 6, key & 63
        iv = ip * nv + v
        c = hv[iv, CNT]
        pos = hv[iv, HD] + c  # (< 2 bsz: a select, where il.wrap branched on data)
        buf[iv * bsz + (pos - bsz if pos >= bsz else pos)] = code
        hv[iv, CNT] = c + 1
        n = il.div(ip, npt, prm.mport, prm.lport)  # (a table of the nodes: a line more)
        if c == 0 and (code & KM) == 0:
            tok = (batch(s.stb, n, 0, t, rd) if rdp else tb) + rd
            hv[iv, TOK], s.rte[iv, RP] = tok, -1
            if wheel and tok > t:
                p = ip - n * npt
                wait(tok, n if flat else ip, p * nv + v if flat else v, s)
            compiled.touch(rule[0], rule[1], rule[2], n + prm.lo, s.pk_dst[code >> FS])
            if osp > 1:  # its place in the queues (iq_lean_spec; kd: stages of several cycles)
                r = rank(ip - n * npt, prm.deg, prm.rot)
                if kd and rd:
                    rc_keys(iv, tok - rd, tb, r, rd, prm.vad, prm.sad, s)
                else:
                    s.vkey[iv] = s.skey[iv] = tb * KS + r if rd == 0 else low(tb) + KS + r
        elif c == 0 and osp > 1:
            s.skey[iv] = tb * KS + rank(ip - n * npt, prm.deg, prm.rot)
        if flat:
            s.pm[n] |= U1 << np.uint64((ip - n * npt) * nv + v)
        else:
            s.vm[ip] |= U1 << np.uint64(v)
            s.pm[n] |= U1 << np.uint64(ip - n * npt)
        s.actb[n >> 6] |= U1 << np.uint64(n & 63)
    s.cn[k] = 0
    return cnt


@njit(cache=True, error_model="numpy", _nrt=False)
def terminals(t, s, nv, npt, fl, deg, niv, wt):
    """The terminals with a packet each send one flit into their router's injection channel
    (``TrafficManager::_Step``'s injection: the head on the VC round-robin after the last one
    taken, VC 0 first, when it has a credit and, with ``wait_for_tail_credit`` (``wt``),
    its last packet's credits are all back; the packet's flits on it while they have
    credits). Returns the flits sent."""
    nar = s.cn.size
    cap = s.ck.size // nar
    st = (t + 2) % nar  # the injection channel: read two cycles on
    nt, kept, sent = s.misc[1], 0, 0
    cred = s.cred
    for i in range(nt):
        n = s.tact[i]
        pk = s.sq_h[n]
        if pk < 0:
            s.ton[n] = 0
            continue
        s.tact[kept] = n
        kept += 1
        tb = niv + n * nv
        f = s.sq_k[n]
        v = s.sq_vc[n]
        if f == 0 and v < 0:
            lvc = s.last_vc[n]
            for j in range(1, nv + 1):
                c = 0 if lvc < 0 else il.wrap(lvc + j, nv)
                if cred[tb + c] > 0 and (wt == 0 or s.otl[tb + c] == 0):
                    v = c
                    break
            if v < 0:
                continue
        if cred[tb + v] <= 0:
            continue
        if f == 0:
            s.last_vc[n] = v
            s.pk_adm[pk] = t
        cred[tb + v] -= 1
        x = st * cap + s.cn[st]
        s.ck[x], s.cc[x] = (n * npt + deg) << 6 | v, pk << FS | f
        s.cn[st] += 1
        sent += 1
        if f == fl - 1:
            s.sq_h[n] = s.pk_next[pk]
            if s.sq_h[n] < 0:
                s.sq_t[n] = -1
            s.sq_k[n], s.sq_vc[n] = 0, -1
            if wt:
                s.otl[tb + v] = 1
        else:
            s.sq_k[n], s.sq_vc[n] = f + 1, v
    s.misc[1] = kept
    return sent


@njit(cache=True, error_model="numpy", _nrt=False)
def tail_credits(x, capk, niv, nv, bsz, s, vdm, vdl):
    """The credits due in ring slot ``x`` under ``wait_for_tail_credit``: a VC whose tail
    was sent is free again with its last credit back (a router's output VC in ``ofree``; a
    terminal's injection VC: ``otl`` read as it picks one). ``vdm``, ``vdl``: ``nv``'s
    :func:`~mpinet.engine.flit.iq_lists.magic` (not a division a tail: docs/iq-router.md,
    "Session 23")."""
    cred, otl = s.cred, s.otl
    for i in range(s.kn[x]):
        j = s.kk[x * capk + i]
        c = cred[j] + 1
        cred[j] = c
        if c == bsz and otl[j]:
            otl[j] = 0
            if j < niv:
                q = il.div(j, nv, vdm, vdl)
                s.ofree[q] |= U1 << np.uint64(j - q * nv)


@njit(cache=True, error_model="numpy", _nrt=False)
def fetch_router(n, s, npt, nv, nin):
    """Router ``n``'s lines its visit reads first (its ports' VC masks, input VC rows, free
    output VCs, credits and allocators' pointers), fetched while the router before it runs."""
    nq = npt * nv
    prefetch(s.vm, n * npt)
    for j in range(0, nq, 4):  # 16-byte rows, 4 a line
        prefetch(s.hv, n * nq + j)
    prefetch(s.hv, n * nq + nq - 1)
    prefetch(s.ofree, n * npt)
    prefetch(s.cred, n * nq)
    prefetch(s.vrr, n * nin)
    prefetch(s.sa_pin, n * nin)
    prefetch(s.sa_pout, n * npt)
    prefetch(s.va_pin, n * nq)
    prefetch(s.va_pout, n * nq)


@njit(cache=True, error_model="numpy", _nrt=False)
def deliveries(t, x, n_, nd, oq, deliv, s):
    """The tails that reached their terminals for cycle ``t`` (ring slot ``x``; in node
    order, as BookSim's terminals read them, when output queues may have put them out of
    it) written into ``deliv`` from row ``nd``, their packet slots freed; returns the next
    row."""
    if oq:
        by_node(s.dq, x * n_, s.dn[x], s.pk_dst)
    for i in range(s.dn[x]):
        nd = il.deliver(s.dq[x * n_ + i], t, nd, deliv, s)
    s.dn[x] = 0
    return nd


@njit(cache=True, error_model="numpy", _nrt=False)
def enqueue(t, a, b, pid, src, dst, hdr, lo, s):
    """The injections ``a .. b - 1`` (packets created at cycle ``t``) each in a free packet
    slot at the back of its source's queue; a terminal whose queue was empty joins the
    active terminals (``tact``)."""
    for i in range(a, b):
        s.pk_nfree[0] -= 1
        pk = s.pk_free[s.pk_nfree[0]]
        s.pk_pid[pk], s.pk_src[pk], s.pk_dst[pk] = pid[i], src[i], dst[i]
        s.pk_inj[pk], s.pk_adm[pk], s.pk_hops[pk], s.pk_state[pk] = t, -1, 0, 0
        for c in range(hdr.shape[1]):
            s.pk_hdr[pk, c] = hdr[i, c]
        s.pk_next[pk] = -1
        n = src[i] - lo
        if s.sq_t[n] >= 0:
            s.pk_next[s.sq_t[n]] = pk
        else:
            s.sq_h[n] = pk
        s.sq_t[n] = pk
        if s.ton[n] == 0:
            s.ton[n] = 1
            s.tact[s.misc[1]] = n
            s.misc[1] += 1
