"""The floor's run with an array a field (scripts/iq_floor.py, ``--layouts soa``): each input
VC's row of four words (:data:`HD` ...) beside its ring in ``buf``, the ports' bit sets,
pointers, free VCs and credits in arrays of their own. The same rules, cycle for cycle, as
:func:`iq_floor_kernels.run_router` (whose docstring has them); the two give the same
deliveries (iq_floor.py checks it).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

#: columns of an input VC's row: ring head, flits held, output (port << 6 | VC; -1: none,
#: the front is a head to route), the cycle its front may go next (VC or switch allocation)
HD, CNT, OUT, TOK = range(4)
U1 = np.uint64(1)


@njit(cache=True, inline="always")
def _low(w):
    """The index of ``w``'s lowest set bit (``w`` non-zero)."""
    return np.int64(trailing_zeros(w))


@njit(cache=True)
def run_soa(prm, table, up, down, src, dst, ctime, qlist, qstart, inj, deliv, stats):
    """:func:`iq_floor_kernels.run_router`'s run and arguments, an array a field."""
    n_, npt, nv, nb, nf, deg = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5]
    rd, vad, sad, xd, lat, cd, tmax = prm[6], prm[7], prm[8], prm[9], prm[10], prm[11], prm[12]
    niv = n_ * npt * nv
    buf = np.empty(niv * nb, np.int32)  # input VC iv's ring: buf[iv * nb ...], flit codes
    hv = np.zeros((niv, 4), np.int32)  # one row an input VC (16 bytes: a quarter of a line)
    hv[:, OUT] = -1
    vm = np.zeros(n_ * npt, np.uint64)  # per input port: its VCs holding flits
    pm = np.zeros(n_, np.uint64)  # per router: its input ports holding flits
    vrr = np.zeros(n_ * npt, np.int64)  # per input port: switch allocation's VC pointer
    prr = np.zeros(n_, np.int64)  # per router: the input port served first this cycle
    full = ~np.uint64(0) if nv == 64 else (U1 << np.uint64(nv)) - U1
    ofree = np.full(n_ * npt, full, np.uint64)  # per output port: its free VCs
    # per output VC its credits; the terminal's port (deg) holds the terminal's credits of
    # its router's injection VCs (the ejection needs none: a terminal always takes a flit)
    cred = np.full(niv, nb, np.int32)
    dly = sad - 1 + xd + lat + 1  # switch allocation to the next router's read
    r = max(dly, 2) + 1  # the channels' ring of arrival cycles (a terminal's takes 2)
    cap = n_ * npt  # at most one flit an output port (and one a terminal) a cycle
    ck, cc, cn = np.empty(r * cap, np.int32), np.empty(r * cap, np.int32), np.zeros(r, np.int64)
    cdl, cdt = lat + 1 + cd, 2 + cd  # a credit's return from a router, from the terminal's port
    rc = max(cdl, cdt) + 1
    kk, kn = np.empty(rc * cap, np.int32), np.zeros(rc, np.int64)
    actb = np.zeros((n_ + 63) // 64, np.uint64)  # the routers holding flits
    fullp = (U1 << np.uint64(npt)) - U1
    tact, ton, nt = np.empty(n_, np.int64), np.zeros(n_, np.uint8), 0  # terminals with packets
    qp = qstart[:-1].copy()
    tfl, tvc = np.zeros(n_, np.int64), np.zeros(n_, np.int64)  # flits sent, VC of the front
    npk, g, ndel, hops, visits, t = inj.size, 0, 0, 0, 0, 0
    while ndel < npk and t < tmax:
        # read: the credits due now, then the flits arriving (each into its VC's ring)
        s = t % rc
        for i in range(kn[s]):
            cred[kk[s * cap + i]] += 1
        kn[s] = 0
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
            fresh = (c == 0) & (code & 63 == 0)  # a head at the front: routed from t + rd
            hv[iv, TOK] = t + rd if fresh else hv[iv, TOK]
            vm[ip] |= U1 << np.uint64(v)
            pm[n] |= U1 << np.uint64(p)
            actb[n >> 6] |= U1 << np.uint64(n & 63)
        cn[s] = 0
        # the packets created now make their terminal active
        while g < npk and ctime[inj[g]] <= t:
            n = src[inj[g]]
            if ton[n] == 0:
                ton[n] = 1
                tact[nt] = n
                nt += 1
            g += 1
        # terminals: one flit of the front packet a cycle, on a VC with a credit
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
            if f == 0:  # a head: the next VC with a credit after the last one taken
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
        # routers: one pass each, VC and switch allocation fused, the winners moved at once
        sd, sc, sct = (t + dly) % r, (t + cdl) % rc, (t + cdt) % rc
        for wi in range(actb.size):
            word = actb[wi]
            while word:
                n = wi * 64 + _low(word)
                word &= word - U1
                visits += 1
                taken = np.uint64(0)  # the output ports granted this cycle
                s0 = prr[n]
                prr[n] = s0 + 1 if s0 + 1 < npt else 0
                pmk = pm[n]  # input ports from s0 on, wrapping (rotating priority)
                w = ((pmk >> np.uint64(s0)) | (pmk << np.uint64(npt - s0))) & fullp
                while w:
                    p = _low(w) + s0
                    p -= npt if p >= npt else 0
                    w &= w - U1
                    ip = n * npt + p
                    m = vm[ip]
                    best, bk, r0 = -1, nv, vrr[ip]
                    while m:  # every VC holding flits: heads routed and given a VC, bids kept
                        v = _low(m)
                        m &= m - U1
                        iv = ip * nv + v
                        if t < hv[iv, TOK]:
                            continue
                        out = hv[iv, OUT]
                        if out < 0:  # a head: its route and the first free VC of its output
                            d = dst[buf[iv * nb + hv[iv, HD]] >> 6]
                            op = deg if d == n else np.int64(table[n * n_ + d])
                            if op == deg:
                                out = deg << 6
                            else:
                                fr = ofree[n * npt + op]
                                if fr == 0:
                                    continue
                                ofree[n * npt + op] = fr & (fr - U1)
                                out = op << 6 | _low(fr)
                            hv[iv, OUT] = out
                            hv[iv, TOK] = t + vad  # switch allocation from t + vad
                            continue
                        op = out >> 6
                        if (taken >> np.uint64(op)) & U1:
                            continue
                        if op != deg and cred[(n * npt + op) * nv + (out & 63)] == 0:
                            continue
                        kv = v - r0 if v >= r0 else v - r0 + nv  # round-robin from the pointer
                        if kv < bk:
                            bk, best = kv, v
                    if best < 0:
                        continue
                    # the winner's flit out of its ring, its credit back upstream
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
                    taken |= U1 << np.uint64(op)
                    if p == deg:
                        kk[sct * cap + kn[sct]] = ip * nv + best
                        kn[sct] += 1
                    else:
                        kk[sc * cap + kn[sc]] = up[ip] * nv + best
                        kn[sc] += 1
                    if code & 63 == nf - 1:  # the tail: the output VC freed, the next head
                        hv[iv, OUT] = -1  # routed from the next cycle (+ routing delay)
                        if c > 0:
                            hv[iv, TOK] = t + 1 + rd
                        if op == deg:
                            deliv[code >> 6] = t + sad - 1 + xd + 2
                            ndel += 1
                        else:
                            ofree[n * npt + op] |= U1 << np.uint64(ov)
                    if op != deg:  # the credit spent, the flit on the channel
                        cred[(n * npt + op) * nv + ov] -= 1
                        ck[sd * cap + cn[sd]] = down[n * npt + op] | ov
                        cc[sd * cap + cn[sd]] = code
                        cn[sd] += 1
                        hops += 1
                if pm[n] == 0:
                    actb[wi] &= ~(U1 << np.uint64(n & 63))
        t += 1
    stats[0], stats[1], stats[2], stats[3] = t, hops, visits, ndel
