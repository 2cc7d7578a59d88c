"""The floor with the exact model's rules added one at a time (scripts/iq_floor.py,
``--modes``; docs/iq-router.md, "Session 17, part 3"): :func:`iq_floor_soa.run_soa`'s layout
and run, each router's pass split in two (the heads' allocation and the bids collected, then
switch allocation and the winners moved), with ``mode``'s bits:

- :data:`M_SA`: switch allocation by iSLIP, one iteration, as the exact model's: a request per
  (input port, output port), its VC the nearest at or after the input's VC pointer with a
  credit; grant pointers per output, accept pointers per input, moved on a match;
- :data:`M_VA`: VC allocation by iSLIP, one iteration: every free VC of the head's output
  requested (the ejection's VCs too, with their credits), pointers per input and output VC;
- :data:`M_RT`: a separate route stage: a head's port computed as it reaches its VC's front
  and kept in its row, read by VC allocation ``routing_delay`` cycles later.

Mode 0 is the floor's rules in the split pass (first free VC, the greedy switch allocation
over the inputs in a rotating order). The stage queues' order (the exact model's first
item) decides nothing here: iSLIP's choices do not depend on the order of its requests, and
with one-cycle stages and no output speedup the exact model itself visits a stage's items in
the order of a full scan (mpinet/engine/flit/iq_router.py: ``quick_va``, ``quick_sa``).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

#: an input VC's row: ring head, flits, output (port << 6 | VC, -1: none), next cycle, route
HD, CNT, OUT, TOK, RP = range(5)
#: mode bits
M_SA, M_VA, M_RT = 1, 2, 4
U1 = np.uint64(1)


@njit(cache=True, inline="always")
def _low(w):
    """The index of ``w``'s lowest set bit (``w`` non-zero)."""
    return np.int64(trailing_zeros(w))


@njit(cache=True, inline="always")
def _ahead(a, b, ptr, size):
    """Whether ``a`` is nearer than ``b`` at or after the round-robin pointer ``ptr``."""
    da, db = a - ptr, b - ptr
    da += size if da < 0 else 0
    db += size if db < 0 else 0
    return da < db


@njit(cache=True, inline="always")
def _islip(nr, rin, rout, q, nin, nout, pin, pout, z, grant, bo, bi):
    """One iSLIP iteration on ``nr`` requests (one an input-output pair), rows ``q ..`` of
    ``rin``/``rout``: each output offers itself to the requester nearest its grant pointer
    ``pout[z + o]``, each input accepts the offer nearest its accept pointer ``pin[z + i]``;
    a match moves both pointers past it (offsets, not slices: a slice a call cost 2-3x the
    floor's time a flit-hop). ``bo``/``bi``: scratch, -1 on entry and on return. One
    request is matched at once (as the full pass matches it)."""
    if nr == 1:
        grant[0] = 1
        i, o = rin[q], rout[q]
        pout[z + o] = i + 1 if i + 1 < nin else 0
        pin[z + i] = o + 1 if o + 1 < nout else 0
        return
    for r in range(nr):
        grant[r] = 0
        o, b = rout[q + r], bo[rout[q + r]]
        if b < 0 or _ahead(rin[q + r], rin[q + b], pout[z + o], nin):
            bo[o] = r
    for r in range(nr):
        i, b = rin[q + r], bi[rin[q + r]]
        if bo[rout[q + r]] == r and (b < 0 or _ahead(rout[q + r], rout[q + b], pin[z + i], nout)):
            bi[i] = r
    for r in range(nr):
        i, o = rin[q + r], rout[q + r]
        if bi[i] == r:
            grant[r] = 1
            pout[z + o] = i + 1 if i + 1 < nin else 0
            pin[z + i] = o + 1 if o + 1 < nout else 0
    for r in range(nr):
        bo[rout[q + r]], bi[rin[q + r]] = -1, -1


@njit(cache=True)
def run_x(prm, table, up, down, src, dst, ctime, qlist, qstart, inj, deliv, stats):
    """:func:`iq_floor_soa.run_soa`'s run and arguments, ``prm[13]`` the mode's bits and
    ``prm[14]`` the port the allocators' pointers start at, ``prm[15]`` the ejection's credit
    loop past the crossbar (4: the flit over the terminal's channel, its credit back)."""
    n_, npt, nv, nb, nf, deg = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5]
    rd, vad, sad, xd, lat, cd, tmax = prm[6], prm[7], prm[8], prm[9], prm[10], prm[11], prm[12]
    sa_x, va_x, rt_x, p0 = prm[13] & M_SA, prm[13] & M_VA, prm[13] & M_RT, prm[14]
    niv, nq = n_ * npt * nv, npt * nv
    buf = np.empty(niv * nb, np.int32)
    hv = np.zeros((niv, 5), np.int32)
    hv[:, OUT] = -1
    vm = np.zeros(n_ * npt, np.uint64)
    pm = np.zeros(n_, np.uint64)
    vrr = np.zeros(n_ * npt, np.int64)
    prr = np.zeros(n_, np.int64)
    full = ~np.uint64(0) if nv == 64 else (U1 << np.uint64(nv)) - U1
    ofree = np.full(n_ * npt, full, np.uint64)
    cred = np.full(niv, nb, np.int32)
    ecr = np.full(n_ * nv, nb, np.int32)  # the ejection's credits (M_VA)
    sa_pin, sa_pout = np.full(n_ * npt, p0, np.int64), np.full(n_ * npt, p0, np.int64)
    va_pin, va_pout = np.full(niv, p0 * nv, np.int64), np.full(niv, p0 * nv, np.int64)
    so = nq * nv  # switch allocation's rows after VC allocation's
    nreq = so + npt * npt
    rin, rout, rlab = np.empty(nreq, np.int64), np.empty(nreq, np.int64), np.empty(nreq, np.int64)
    grant = np.zeros(nreq, np.uint8)
    bo, bi = np.full(nq, -1, np.int64), np.full(nq, -1, np.int64)
    smap = np.full(npt * npt, -1, np.int64)  # (input, output) port: its request's row
    dly = sad - 1 + xd + lat + 1
    r = max(dly, 2) + 1
    cap = n_ * npt
    ck, cc, cn = np.empty(r * cap, np.int32), np.empty(r * cap, np.int32), np.zeros(r, np.int64)
    cdl, cdt, cde = lat + 1 + cd, 2 + cd, sad - 1 + xd + prm[15] + cd  # cde: the ejection's
    rc = max(cdl, cdt, cde) + 1
    kk, kn = np.empty(rc * cap, np.int32), np.zeros(rc, np.int64)
    ek, en = np.empty(rc * n_, np.int32), np.zeros(rc, np.int64)
    actb = np.zeros((n_ + 63) // 64, np.uint64)
    fullp = (U1 << np.uint64(npt)) - U1
    tact, ton, nt = np.empty(n_, np.int64), np.zeros(n_, np.uint8), 0
    qp = qstart[:-1].copy()
    tfl, tvc = np.zeros(n_, np.int64), np.full(n_, nv - 1, np.int64)  # a first head on VC 0
    npk, g, ndel, hops, visits, t = inj.size, 0, 0, 0, 0, 0
    while ndel < npk and t < tmax:
        s = t % rc
        for i in range(kn[s]):
            cred[kk[s * cap + i]] += 1
        kn[s] = 0
        for i in range(en[s]):
            ecr[ek[s * n_ + i]] += 1
        en[s] = 0
        s = t % r
        for i in range(cn[s]):
            key, code = ck[s * cap + i], cc[s * cap + i]
            n, p, v = key >> 12, (key >> 6) & 63, key & 63
            ip = n * npt + p
            iv = ip * nv + v
            c = hv[iv, CNT]
            pos = hv[iv, HD] + c
            pos -= nb if pos >= nb else 0
            buf[iv * nb + pos] = code
            hv[iv, CNT] = c + 1
            if (c == 0) & (code & 63 == 0):  # a head at the front: routed from t + rd
                hv[iv, TOK] = t + rd
                if rt_x:  # the route stage: its port now, read by VC allocation
                    d = dst[code >> 6]
                    hv[iv, RP] = deg if d == n else np.int64(table[n * n_ + d])
            vm[ip] |= U1 << np.uint64(v)
            pm[n] |= U1 << np.uint64(p)
            actb[n >> 6] |= U1 << np.uint64(n & 63)
        cn[s] = 0
        while g < npk and ctime[inj[g]] <= t:
            n = src[inj[g]]
            if ton[n] == 0:
                ton[n] = 1
                tact[nt] = n
                nt += 1
            g += 1
        st = (t + 2) % r
        k = 0
        for i in range(nt):
            n = tact[i]
            j = qp[n]
            if j == qstart[n + 1] or ctime[qlist[j]] > t:
                ton[n] = 0
                continue
            tact[k] = n
            k += 1
            base = (n * npt + deg) * nv
            f = tfl[n]
            if f == 0:
                v = tvc[n]
                for _ in range(nv):
                    v = v + 1 if v + 1 < nv else 0
                    if cred[base + v] > 0:
                        break
                tvc[n] = v
            v = tvc[n]
            if cred[base + v] == 0:
                continue
            cred[base + v] -= 1
            ck[st * cap + cn[st]] = n << 12 | deg << 6 | v
            cc[st * cap + cn[st]] = qlist[j] << 6 | f
            cn[st] += 1
            f += 1
            if f == nf:
                f = 0
                qp[n] = j + 1
            tfl[n] = f
        nt = k
        sd, sc, sct, sce = (t + dly) % r, (t + cdl) % rc, (t + cdt) % rc, (t + cde) % rc
        for wi in range(actb.size):
            word = actb[wi]
            while word:
                n = wi * 64 + _low(word)
                word &= word - U1
                visits += 1
                b0 = n * nq  # the router's first input VC (and output VC)
                s0 = prr[n]
                prr[n] = s0 + 1 if s0 + 1 < npt else 0
                pmk = pm[n]
                w = ((pmk >> np.uint64(s0)) | (pmk << np.uint64(npt - s0))) & fullp
                nr, nva = 0, 0
                # pass 1: heads routed and allocated a VC (or their VC requests), bids kept
                while w:
                    p = _low(w) + s0
                    p -= npt if p >= npt else 0
                    w &= w - U1
                    ip = n * npt + p
                    m = vm[ip]
                    while m:
                        v = _low(m)
                        m &= m - U1
                        iv = ip * nv + v
                        if t < hv[iv, TOK]:
                            continue
                        out = hv[iv, OUT]
                        if out < 0:
                            if rt_x:
                                op = np.int64(hv[iv, RP])
                            else:
                                d = dst[buf[iv * nb + hv[iv, HD]] >> 6]
                                op = deg if d == n else np.int64(table[n * n_ + d])
                            if va_x:  # every free VC of the output, the ejection's too
                                fr = ofree[n * npt + op]
                                while fr:
                                    rin[nva], rout[nva] = p * nv + v, op * nv + _low(fr)
                                    nva += 1
                                    fr &= fr - U1
                                continue
                            if op == deg:
                                out = deg << 6
                            else:
                                fr = ofree[n * npt + op]
                                if fr == 0:
                                    continue
                                ofree[n * npt + op] = fr & (fr - U1)
                                out = op << 6 | _low(fr)
                            hv[iv, OUT] = out
                            hv[iv, TOK] = t + vad
                            continue
                        op, ov = out >> 6, out & 63
                        if op != deg:
                            if cred[(n * npt + op) * nv + ov] == 0:
                                continue
                        elif va_x and ecr[n * nv + ov] == 0:
                            continue
                        key = p * npt + op  # one request an (input, output): the VC nearest
                        x = smap[key]  # after the input's pointer
                        if x < 0:
                            smap[key] = nr
                            rin[so + nr], rout[so + nr], rlab[nr] = p, op, v
                            nr += 1
                        elif _ahead(v, rlab[x], vrr[ip], nv):
                            rlab[x] = v
                if nva:  # VC allocation by iSLIP over the router's input and output VCs
                    _islip(nva, rin, rout, 0, nq, nq, va_pin, va_pout, b0, grant, bo, bi)
                    for x in range(nva):
                        if grant[x]:
                            iv, op, ov = b0 + rin[x], rout[x] // nv, rout[x] % nv
                            ofree[n * npt + op] &= ~(U1 << np.uint64(ov))
                            hv[iv, OUT] = op << 6 | ov
                            hv[iv, TOK] = t + vad
                # switch allocation: iSLIP, or the floor's greedy over the inputs in order
                if sa_x:
                    # _islip written out: an inlined call with array arguments pays numba's
                    # reference counts (7 increfs and decrefs a router visit: twice mode 1's
                    # time; docs/iq-router.md, "Counted (P5)")
                    zz = n * npt
                    if nr == 1:
                        grant[0] = 1
                        i, o = rin[so], rout[so]
                        sa_pout[zz + o] = i + 1 if i + 1 < npt else 0
                        sa_pin[zz + i] = o + 1 if o + 1 < npt else 0
                    elif nr > 1:
                        for r_ in range(nr):
                            grant[r_] = 0
                            o, b = rout[so + r_], bo[rout[so + r_]]
                            if b < 0 or _ahead(rin[so + r_], rin[so + b], sa_pout[zz + o], npt):
                                bo[o] = r_
                        for r_ in range(nr):
                            i, b = rin[so + r_], bi[rin[so + r_]]
                            if bo[rout[so + r_]] == r_ and (
                                b < 0 or _ahead(rout[so + r_], rout[so + b], sa_pin[zz + i], npt)
                            ):
                                bi[i] = r_
                        for r_ in range(nr):
                            i, o = rin[so + r_], rout[so + r_]
                            if bi[i] == r_:
                                grant[r_] = 1
                                sa_pout[zz + o] = i + 1 if i + 1 < npt else 0
                                sa_pin[zz + i] = o + 1 if o + 1 < npt else 0
                        for r_ in range(nr):
                            bo[rout[so + r_]], bi[rin[so + r_]] = -1, -1
                else:
                    taken = np.uint64(0)
                    for x in range(nr):
                        grant[x] = 0
                    x0 = 0
                    while x0 < nr:  # the rows of one input port, in the pass's order
                        x1 = x0
                        while x1 < nr and rin[so + x1] == rin[so + x0]:
                            x1 += 1
                        best, r0 = -1, vrr[n * npt + rin[so + x0]]
                        for x in range(x0, x1):
                            if (taken >> np.uint64(rout[so + x])) & U1:
                                continue
                            if best < 0 or _ahead(rlab[x], rlab[best], r0, nv):
                                best = x
                        if best >= 0:
                            grant[best] = 1
                            taken |= U1 << np.uint64(rout[so + best])
                        x0 = x1
                # the winners' flits out of their rings, their credits back upstream
                for x in range(nr):
                    p = rin[so + x]
                    smap[p * npt + rout[so + x]] = -1
                    if grant[x] == 0:
                        continue
                    best = rlab[x]
                    ip = n * npt + p
                    iv = ip * nv + best
                    out = hv[iv, OUT]
                    op, ov = out >> 6, out & 63
                    h = hv[iv, HD]
                    code = buf[iv * nb + h]
                    hv[iv, HD] = h + 1 if h + 1 < nb else 0
                    c = hv[iv, CNT] - 1
                    hv[iv, CNT] = c
                    if c == 0:
                        vm[ip] &= ~(U1 << np.uint64(best))
                        if vm[ip] == 0:
                            pm[n] &= ~(U1 << np.uint64(p))
                    vrr[ip] = best + 1 if best + 1 < nv else 0
                    if p == deg:
                        kk[sct * cap + kn[sct]] = ip * nv + best
                        kn[sct] += 1
                    else:
                        kk[sc * cap + kn[sc]] = up[ip] * nv + best
                        kn[sc] += 1
                    if code & 63 == nf - 1:  # the tail: the output VC freed, the next head
                        hv[iv, OUT] = -1
                        if c > 0:
                            hv[iv, TOK] = t + 1 + rd
                            if rt_x:
                                d = dst[buf[iv * nb + hv[iv, HD]] >> 6]
                                hv[iv, RP] = deg if d == n else np.int64(table[n * n_ + d])
                        if op == deg:
                            deliv[code >> 6] = t + sad - 1 + xd + 2
                            ndel += 1
                        if op != deg or va_x:
                            ofree[n * npt + op] |= U1 << np.uint64(ov)
                    if op != deg:
                        cred[(n * npt + op) * nv + ov] -= 1
                        ck[sd * cap + cn[sd]] = down[n * npt + op] | ov
                        cc[sd * cap + cn[sd]] = code
                        cn[sd] += 1
                        hops += 1
                    elif va_x:  # the ejection's credit, back from the terminal
                        ecr[n * nv + ov] -= 1
                        ek[sce * n_ + en[sce]] = n * nv + ov
                        en[sce] += 1
                if pm[n] == 0:
                    actb[wi] &= ~(U1 << np.uint64(n & 63))
        t += 1
    stats[0], stats[1], stats[2], stats[3] = t, hops, visits, ndel
