"""The floor with the exact model's rules added one at a time (scripts/iq_floor.py,
``--modes``; docs/iq-router.md, "Session 17, part 3" and "Session 18"): :func:`iq_floor_soa.
run_soa`'s layout and run, each router's pass split in two (the heads' allocation and the bids
collected, then switch allocation and the winners moved), with ``mode``'s bits:

- :data:`M_SA`: switch allocation by iSLIP, one iteration, as the exact model's: a request per
  (crossbar input, output port), its VC the nearest at or after the input's VC pointer with a
  credit; grant pointers per output, accept pointers per input, moved on a match;
- :data:`M_VA`: VC allocation by iSLIP, one iteration: every free VC of the head's output
  requested (the ejection's VCs too, with their credits), pointers per input and output VC;
- :data:`M_RT`: a separate route stage: a head's port computed as it reaches its VC's front
  and kept in its row, read by VC allocation ``routing_delay`` cycles later;
- :data:`M_WT`: ``wait_for_tail_credit``: an output VC (the terminal's injection VC too) is
  free again only when its tail's credit is back, not as the tail leaves;
- :data:`M_IS`: ``input_speedup``: ``isp`` crossbar inputs a port, VC ``v`` on input
  ``v % isp``, each with its own VC pointer (moved ``isp`` past the winner), so a port may
  send ``isp`` flits a cycle;
- :data:`M_CD`: ``credit_delay`` as the key's (else 0): the credits' delay lines longer;
- :data:`M_LA`: ``routing_delay`` as the key's (else 1): 0 is lookahead routing, a head
  allocated its VC in the cycle it arrives;
- :data:`M_VQ` (with :data:`M_VA`; the same grants, cheaper): VC allocation's heads split by
  output port; a head alone on its port in the visit takes the free VC nearest its input
  pointer (iSLIP's outcome with one requesting input) without the iSLIP passes.

Mode 0 is the floor's rules in the split pass (first free VC, the greedy switch allocation
over the inputs in a rotating order). The stage queues' order (the exact model's first
item) decides nothing here: iSLIP's choices do not depend on the order of its requests, and
with one-cycle stages and no output speedup the exact model itself visits a stage's items in
the order of a full scan (mpinet/engine/flit/iq_router.py: ``quick_va``, ``quick_sa``).

The run loop is compiled without numba's reference counts (``_nrt=False``; its arrays come
from :func:`run_x`), so the inlined :func:`islip` calls cost no atomic counts a visit
(docs/iq-router.md, "Counted (P5)").
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from mpinet.engine.flit.iq_lean_alloc import ahead
from mpinet.engine.flit.iq_lean_alloc import islip1 as islip
from mpinet.engine.flit.iq_lists import low

#: an input VC's row: ring head, flits, output (port << 6 | VC, -1: none), next cycle, route
HD, CNT, OUT, TOK, RP = range(5)
#: mode bits
M_SA, M_VA, M_RT, M_WT, M_IS, M_CD, M_LA, M_VQ = 1, 2, 4, 8, 16, 32, 64, 128
U1 = np.uint64(1)
#: the run's state, allocated by :func:`run_x` (the loop allocates nothing)
State = namedtuple(
    "State",
    "buf hv vm pm vrr prr ofree cred otl ecr etl sa_pin sa_pout va_pin va_pout rin rout rlab "
    "grant bo bi smap ck cc cn kk kn ek en actb tact ton qp tfl tvc hj hq hm opc",
)


@njit(cache=True)
def keys(prm):
    """The mode's keys and the rings they size: (routing delay, credit delay, crossbar inputs
    a port, wait for the tail's credit, the switch-to-read delay, its ring, the credit loops
    of a link, of the terminal's injection and of the ejection, their ring). ``prm`` as
    :func:`run_x`'s."""
    mode, sad, xd, lat = prm[13], prm[8], prm[9], prm[10]
    rd = prm[6] if mode & M_LA else 1
    cd = prm[11] if mode & M_CD else 0
    isp = prm[16] if mode & M_IS else 1
    wt = 1 if (mode & M_WT) and prm[17] else 0
    dly = sad - 1 + xd + lat + 1
    cdl, cdt, cde = lat + 1 + cd, 2, sad - 1 + xd + prm[15] + cd  # a terminal: no delay
    return rd, cd, isp, wt, dly, max(dly, 2) + 1, cdl, cdt, cde, max(cdl, cdt, cde) + 1


def run_x(prm, table, up, down, src, dst, ctime, qlist, qstart, inj, deliv, stats):
    """:func:`iq_floor_soa.run_soa`'s run and arguments, ``prm[13]`` the mode's bits,
    ``prm[14]`` the port the allocators' pointers start at, ``prm[15]`` the ejection's credit
    loop past the crossbar (4: the flit over the terminal's channel, its credit back),
    ``prm[16]`` the input speedup and ``prm[17]`` ``wait_for_tail_credit``: the state
    allocated here, then :func:`_run`."""
    n_, npt, nv, nb, p0 = (int(prm[i]) for i in (0, 1, 2, 3, 14))
    isp, r, rc = (int(x) for x in np.array(keys(prm))[[2, 5, 9]])
    niv, nq, cap, nin = n_ * npt * nv, npt * nv, n_ * npt, npt * isp
    full = np.uint64(2**nv - 1)
    hv = np.zeros((niv, 5), np.int32)
    hv[:, OUT] = -1
    nreq = nq * nv + nin * npt  # VC allocation's rows, then switch allocation's
    i64 = lambda k, x=0: np.full(k, x, np.int64)  # noqa: E731
    st = State(
        np.empty(niv * nb, np.int32), hv, np.zeros(cap, np.uint64), np.zeros(n_, np.uint64),
        i64(n_ * nin), i64(n_), np.full(cap, full, np.uint64), np.full(niv, nb, np.int32),
        np.zeros(niv, np.uint8), np.full(n_ * nv, nb, np.int32), np.zeros(n_ * nv, np.uint8),
        i64(n_ * nin, p0 * isp), i64(cap, p0), i64(niv, p0 * nv), i64(niv, p0 * nv),
        i64(nreq), i64(nreq), i64(nreq), np.zeros(nreq, np.uint8), i64(nq, -1), i64(nq, -1),
        i64(nin * npt, -1), np.empty(r * cap, np.int32), np.empty(r * cap, np.int32), i64(r),
        np.empty(rc * cap * isp, np.int32), i64(rc), np.empty(rc * n_, np.int32), i64(rc),
        np.zeros((n_ + 63) // 64, np.uint64), i64(n_), np.zeros(n_, np.uint8),
        qstart[:-1].copy(), i64(n_), i64(n_, nv - 1),  # the terminal's first head on VC 0
        i64(nq), i64(nq), np.zeros(nq, np.uint64), i64(npt),
    )  # fmt: skip
    _run(prm, table, up, down, src, dst, ctime, qlist, qstart, inj, deliv, stats, st)


@njit(cache=True, _nrt=False)
def _run(prm, table, up, down, src, dst, ctime, qlist, qstart, inj, deliv, stats, st):
    """The run (:func:`run_x`), on the state ``st``."""
    n_, npt, nv, nb, nf, deg = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5]
    vad, sad, xd, tmax = prm[7], prm[8], prm[9], prm[12]
    sa_x, va_x, rt_x, vq_x = prm[13] & M_SA, prm[13] & M_VA, prm[13] & M_RT, prm[13] & M_VQ
    rd, cd, isp, wt, dly, r, cdl, cdt, cde, rc = keys(prm)
    buf, hv, vm, pm, vrr, prr, ofree, cred = st.buf, st.hv, st.vm, st.pm, st.vrr, st.prr, \
        st.ofree, st.cred  # fmt: skip
    otl, ecr, etl, sa_pin, sa_pout, va_pin, va_pout = st.otl, st.ecr, st.etl, st.sa_pin, \
        st.sa_pout, st.va_pin, st.va_pout  # fmt: skip
    rin, rout, rlab, grant, bo, bi, smap = st.rin, st.rout, st.rlab, st.grant, st.bo, st.bi, \
        st.smap  # fmt: skip
    ck, cc, cn, kk, kn, ek, en = st.ck, st.cc, st.cn, st.kk, st.kn, st.ek, st.en
    actb, tact, ton, qp, tfl, tvc = st.actb, st.tact, st.ton, st.qp, st.tfl, st.tvc
    hj, hq, hm, opc = st.hj, st.hq, st.hm, st.opc
    nq, nin, cap = npt * nv, npt * isp, n_ * npt
    kcap = cap * isp  # credits a cycle: one a crossbar input
    so = nq * nv  # switch allocation's rows after VC allocation's
    fullp = (U1 << np.uint64(npt)) - U1
    nt, npk, g, ndel, hops, visits, t = 0, inj.size, 0, 0, 0, 0, 0
    while ndel < npk and t < tmax:
        s = t % rc
        for i in range(kn[s]):
            k = kk[s * kcap + i]
            c = cred[k] + 1
            cred[k] = c
            if wt and c == nb and otl[k]:  # the tail's credit: its VC free (a terminal's
                otl[k] = 0  # injection VC: otl read as it picks one)
                if (k // nv) % npt != deg:
                    ofree[k // nv] |= U1 << np.uint64(k % nv)
        kn[s] = 0
        for i in range(en[s]):
            k = ek[s * n_ + i]
            c = ecr[k] + 1
            ecr[k] = c
            if wt and c == nb and etl[k]:
                etl[k] = 0
                ofree[(k // nv) * npt + deg] |= U1 << np.uint64(k % nv)
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
        stn = (t + 2) % r
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
            if f == 0:  # a head: the next VC after the last one taken, free, with a credit
                v, ok = tvc[n], False
                for _ in range(nv):
                    v = v + 1 if v + 1 < nv else 0
                    if cred[base + v] > 0 and otl[base + v] == 0:
                        ok = True
                        break
                if not ok:
                    continue
                tvc[n] = v
            v = tvc[n]
            if cred[base + v] == 0:
                continue
            cred[base + v] -= 1
            ck[stn * cap + cn[stn]] = n << 12 | deg << 6 | v
            cc[stn * cap + cn[stn]] = qlist[j] << 6 | f
            cn[stn] += 1
            f += 1
            if f == nf:
                f = 0
                qp[n] = j + 1
                otl[base + v] = wt  # in use until its last credit
            tfl[n] = f
        nt = k
        sd, sc, sct, sce = (t + dly) % r, (t + cdl) % rc, (t + cdt) % rc, (t + cde) % rc
        for wi in range(actb.size):
            word = actb[wi]
            while word:
                n = wi * 64 + low(word)
                word &= word - U1
                visits += 1
                b0 = n * nq  # the router's first input VC (and output VC)
                s0 = prr[n]
                prr[n] = s0 + 1 if s0 + 1 < npt else 0
                pmk = pm[n]
                w = ((pmk >> np.uint64(s0)) | (pmk << np.uint64(npt - s0))) & fullp
                nr, nva, nh = 0, 0, 0
                # pass 1: heads routed and allocated a VC (or their VC requests), bids kept
                while w:
                    p = low(w) + s0
                    p -= npt if p >= npt else 0
                    w &= w - U1
                    ip = n * npt + p
                    m = vm[ip]
                    while m:
                        v = low(m)
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
                                if vq_x and fr:  # kept by head, split by output below
                                    hj[nh], hq[nh], hm[nh] = p * nv + v, op, fr
                                    opc[op] += 1
                                    nh += 1
                                    continue
                                while fr:
                                    rin[nva], rout[nva] = p * nv + v, op * nv + low(fr)
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
                                out = op << 6 | low(fr)
                            hv[iv, OUT] = out
                            hv[iv, TOK] = t + vad
                            continue
                        op, ov = out >> 6, out & 63
                        if op != deg:
                            if cred[(n * npt + op) * nv + ov] == 0:
                                continue
                        elif va_x and ecr[n * nv + ov] == 0:
                            continue
                        ei = p * isp + v % isp if isp > 1 else p  # the crossbar input
                        key = ei * npt + op  # one request an (input, output): the VC nearest
                        x = smap[key]  # after the input's pointer
                        if x < 0:
                            smap[key] = nr
                            rin[so + nr], rout[so + nr], rlab[nr] = ei, op, v
                            nr += 1
                        elif ahead(v, rlab[x], vrr[n * nin + ei], nv):
                            rlab[x] = v
                for h in range(nh):  # M_VQ: a head alone on its output port takes the free
                    j, op, fr = hj[h], hq[h], hm[h]  # VC nearest its input's pointer (what
                    if opc[op] > 1:  # iSLIP grants one input); the others by iSLIP
                        while fr:
                            rin[nva], rout[nva] = j, op * nv + low(fr)
                            nva += 1
                            fr &= fr - U1
                        continue
                    k = va_pin[b0 + j] - op * nv
                    hi = fr & ~((U1 << np.uint64(k)) - U1) if 0 < k < nv else np.uint64(0)
                    ov = low(hi) if hi else low(fr)
                    va_pin[b0 + j] = op * nv + ov + 1 if op * nv + ov + 1 < nq else 0
                    va_pout[b0 + op * nv + ov] = j + 1 if j + 1 < nq else 0
                    ofree[n * npt + op] &= ~(U1 << np.uint64(ov))
                    hv[b0 + j, OUT] = op << 6 | ov
                    hv[b0 + j, TOK] = t + vad
                for h in range(nh):
                    opc[hq[h]] = 0
                if nva:  # VC allocation by iSLIP over the router's input and output VCs
                    islip(nva, rin, rout, 0, nq, nq, va_pin, va_pout, b0, b0, grant, bo, bi)
                    for x in range(nva):
                        if grant[x]:
                            iv, op, ov = b0 + rin[x], rout[x] // nv, rout[x] % nv
                            ofree[n * npt + op] &= ~(U1 << np.uint64(ov))
                            hv[iv, OUT] = op << 6 | ov
                            hv[iv, TOK] = t + vad
                # switch allocation: iSLIP, or the floor's greedy over the inputs in order
                if sa_x:
                    if nr:
                        islip(nr, rin, rout, so, nin, npt, sa_pin, sa_pout, n * nin, n * npt,
                               grant, bo, bi)  # fmt: skip
                else:
                    taken = np.uint64(0)
                    for x in range(nr):
                        grant[x] = 0
                    x0 = 0
                    while x0 < nr:  # the rows of one crossbar input, in the pass's order
                        x1 = x0
                        while x1 < nr and rin[so + x1] == rin[so + x0]:
                            x1 += 1
                        best, r0 = -1, vrr[n * nin + rin[so + x0]]
                        for x in range(x0, x1):
                            if (taken >> np.uint64(rout[so + x])) & U1:
                                continue
                            if best < 0 or ahead(rlab[x], rlab[best], r0, nv):
                                best = x
                        if best >= 0:
                            grant[best] = 1
                            taken |= U1 << np.uint64(rout[so + best])
                        x0 = x1
                # the winners' flits out of their rings, their credits back upstream
                for x in range(nr):
                    ei = rin[so + x]
                    smap[ei * npt + rout[so + x]] = -1
                    if grant[x] == 0:
                        continue
                    p = ei // isp if isp > 1 else ei
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
                    b = best + isp
                    vrr[n * nin + ei] = b if b < nv else b - nv
                    if p == deg:
                        kk[sct * kcap + kn[sct]] = ip * nv + best
                        kn[sct] += 1
                    else:
                        kk[sc * kcap + kn[sc]] = up[ip] * nv + best
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
                        if wt:  # free once the tail's credit is back
                            if op != deg:
                                otl[(n * npt + op) * nv + ov] = 1
                            elif va_x:
                                etl[n * nv + ov] = 1
                        elif op != deg or va_x:
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
