"""The floor's compiled run (scripts/iq_floor.py): a lean input-queued router, one loop over
the cycles, each router's state in one block of int32 words (its bit sets, pointers, free
VCs and credits first, then each input VC's four words followed by its ring), so a
flit-hop's writes and reads fall in the lines of two routers. scripts/iq_floor_soa.py runs
the same rules with an array a field (``--layouts soa``).

A cycle: the credits due and the flits arriving (each into its input VC's ring), the
packets created, the terminals (one flit of the front packet, on a VC with a credit), then
one pass per active router: each input VC holding flits, a head routed (one table read) and
given the first free VC of its output, every other front a bid; per input the bid nearest
after its round-robin pointer whose output is still free this cycle wins (inputs in a
rotating order), its flit moves at once (its credit returned upstream, the downstream
credit spent, the flit onto the channel's list of its arrival cycle).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

#: the words of a router's block (run_router): input ports holding flits, the port served
#: first; then per port its VCs holding flits, VC pointer, free output VCs
R_PM, R_PRR, R_HDR = 0, 1, 2
#: an input VC's words in a router's block, its ring after them
V_HD, V_CNT, V_OUT, V_TOK, V_W = 0, 1, 2, 3, 4


U1 = np.uint64(1)


@njit(cache=True)
def run_router(prm, table, up, down, src, dst, ctime, qlist, qstart, inj, deliv, stats):
    """The whole run, cycle by cycle, until every packet is delivered (or ``prm[12]`` cycles).

    ``prm``: N, ports P (the terminal's is ``deg``), VCs V, buffer B, flits F, deg, routing,
    VC allocation, switch allocation and crossbar delays, channel latency L, credit delay,
    cycles at most. ``up[ip]``: the output port (node * P + port) a flit into input port
    ``ip`` came from; ``down[op]``: the key (node << 12 | port << 6) of the input port behind
    output port ``op``. Packets are created at ``ctime[pid]``; ``inj`` lists them by creation,
    ``qlist[qstart[n]:qstart[n + 1]]`` a source's queue. ``deliv[pid]``: the tail's arrival.
    ``stats``: cycles, flit-hops (router to router), router visits, packets delivered.

    A router's block of ``rs`` words: :data:`R_PM` ..., then ``vm``, ``vrr``, ``ofree`` a
    port, the credits an output VC, the input VCs' words and rings (``rs`` rounded up to a
    64-byte line). Bit sets are int32 words (at most 30 VCs and 30 ports)."""
    n_, npt, nv, nb, nf, deg = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5]
    rd, vad, sad, xd, lat, cd, tmax = prm[6], prm[7], prm[8], prm[9], prm[10], prm[11], prm[12]
    o_vrr, o_of, o_cr = R_HDR + npt, R_HDR + 2 * npt, R_HDR + 3 * npt
    o_vc = o_cr + npt * nv  # the first input VC's words
    vs = V_W + nb  # an input VC's words and ring
    rs = (o_vc + npt * nv * vs + 15) // 16 * 16
    st_ = np.zeros(n_ * rs + 16, np.int32)
    full = (1 << nv) - 1
    for n in range(n_):
        b = n * rs
        for p in range(npt):
            st_[b + o_of + p] = full
            for v in range(nv):
                st_[b + o_cr + p * nv + v] = nb  # the terminal's port: its injection credits
                st_[b + o_vc + (p * nv + v) * vs + V_OUT] = -1
    upw = np.empty(n_ * npt, np.int64)  # per input port: the upstream credits' first word
    for ip in range(n_ * npt):
        upw[ip] = (up[ip] // npt) * rs + o_cr + (up[ip] % npt) * nv
    dly = sad - 1 + xd + lat + 1
    r = max(dly, 2) + 1
    cap = n_ * npt
    ck, cc, cn = np.empty(r * cap, np.int32), np.empty(r * cap, np.int32), np.zeros(r, np.int64)
    cdl, cdt = lat + 1 + cd, 2 + cd
    rc = max(cdl, cdt) + 1
    kk, kn = np.empty(rc * cap, np.int32), np.zeros(rc, np.int64)  # credits: the word to add 1
    actb = np.zeros((n_ + 63) // 64, np.uint64)
    fullp = (1 << npt) - 1
    tact, ton, nt = np.empty(n_, np.int64), np.zeros(n_, np.uint8), 0
    qp = qstart[:-1].copy()
    tfl, tvc = np.zeros(n_, np.int64), np.zeros(n_, np.int64)
    npk, g, ndel, hops, visits, t = inj.size, 0, 0, 0, 0, 0
    while ndel < npk and t < tmax:
        # read: the credits due now, then the flits arriving, each into its VC's ring; the
        # bit sets written whether or not the VC was empty (a branch fewer a flit-hop)
        s = t % rc
        for i in range(kn[s]):
            st_[kk[s * cap + i]] += 1
        kn[s] = 0
        s = t % r
        for i in range(cn[s]):
            key, code = ck[s * cap + i], cc[s * cap + i]
            n, p, v = key >> 12, (key >> 6) & 63, key & 63
            b = n * rs
            w = b + o_vc + (p * nv + v) * vs
            c = st_[w + V_CNT]
            pos = st_[w + V_HD] + c
            pos -= nb if pos >= nb else 0
            st_[w + V_W + pos] = code
            st_[w + V_CNT] = c + 1
            fresh = (c == 0) & (code & 63 == 0)  # a head at the front: routed from t + rd
            st_[w + V_TOK] = t + rd if fresh else st_[w + V_TOK]
            st_[b + R_HDR + p] |= 1 << v
            st_[b + R_PM] |= 1 << p
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
            base = n * rs + o_cr + deg * nv
            f = tfl[n]
            if f == 0:  # a head: the next VC with a credit after the last one taken
                v = tvc[n]
                for _ in range(nv):
                    v = v + 1 if v + 1 < nv else 0
                    if st_[base + v] > 0:
                        break
                tvc[n] = v
            v = tvc[n]
            if st_[base + v] == 0:
                continue
            st_[base + v] -= 1
            ck[st * cap + cn[st]] = n << 12 | deg << 6 | v
            cc[st * cap + cn[st]] = qlist[j] << 6 | f
            cn[st] += 1
            f += 1
            if f == nf:
                f = 0
                qp[n] = j + 1
            tfl[n] = f
        nt = k
        # routers: one pass each, in node order (a bit set: its walk is a few words a
        # cycle), VC and switch allocation fused, each input's winner moved at once
        sd, sc, sct = (t + dly) % r, (t + cdl) % rc, (t + cdt) % rc
        for wi in range(actb.size):  # the routers holding flits, in node order
            word = actb[wi]
            while word:
                n = wi * 64 + np.int64(trailing_zeros(word))
                word &= word - U1
                b = n * rs
                visits += 1
                taken = 0  # the output ports granted this cycle
                s0 = st_[b + R_PRR]
                st_[b + R_PRR] = s0 + 1 if s0 + 1 < npt else 0
                # input ports from s0 on, wrapping (rotating priority over the outputs)
                pmk = st_[b + R_PM]
                w = ((pmk >> s0) | (pmk << (npt - s0))) & fullp
                while w:
                    p = np.int64(trailing_zeros(w)) + s0
                    p -= npt if p >= npt else 0
                    w &= w - 1
                    m = st_[b + R_HDR + p]
                    best, bk, r0 = -1, nv, st_[b + o_vrr + p]
                    vp = b + o_vc + p * nv * vs
                    while m:  # each VC holding flits: heads routed and given a VC, bids kept
                        v = np.int64(trailing_zeros(m))
                        m &= m - 1
                        x = vp + v * vs
                        if t < st_[x + V_TOK]:
                            continue
                        out = st_[x + V_OUT]
                        if out < 0:  # a head: its route and the first free VC of its output
                            d = dst[st_[x + V_W + st_[x + V_HD]] >> 6]
                            op = deg if d == n else np.int64(table[n * n_ + d])
                            if op == deg:
                                out = deg << 6
                            else:
                                fr = st_[b + o_of + op]
                                if fr == 0:
                                    continue
                                st_[b + o_of + op] = fr & (fr - 1)
                                out = op << 6 | np.int64(trailing_zeros(fr))
                            st_[x + V_OUT] = out
                            st_[x + V_TOK] = t + vad  # switch allocation from t + vad
                            continue
                        op = out >> 6
                        if (taken >> op) & 1:
                            continue
                        if op != deg and st_[b + o_cr + op * nv + (out & 63)] == 0:
                            continue
                        kv = v - r0 if v >= r0 else v - r0 + nv  # round-robin from r0
                        if kv < bk:
                            bk, best = kv, v
                    if best < 0:
                        continue
                    x = vp + best * vs  # the winner's flit out, its credit back upstream
                    out = st_[x + V_OUT]
                    op, ov = out >> 6, out & 63
                    h = st_[x + V_HD]
                    code = st_[x + V_W + h]
                    st_[x + V_HD] = h + 1 if h + 1 < nb else 0
                    c = st_[x + V_CNT] - 1
                    st_[x + V_CNT] = c
                    if c == 0:
                        mm = st_[b + R_HDR + p] & ~(1 << best)
                        st_[b + R_HDR + p] = mm
                        if mm == 0:
                            st_[b + R_PM] &= ~(1 << p)
                    st_[b + o_vrr + p] = best + 1 if best + 1 < nv else 0
                    taken |= 1 << op
                    if p == deg:
                        kk[sct * cap + kn[sct]] = b + o_cr + deg * nv + best
                        kn[sct] += 1
                    else:
                        kk[sc * cap + kn[sc]] = upw[n * npt + p] + best
                        kn[sc] += 1
                    if code & 63 == nf - 1:  # the tail: the output VC freed, the next head
                        st_[x + V_OUT] = -1  # routed from the next cycle (+ routing delay)
                        if c > 0:
                            st_[x + V_TOK] = t + 1 + rd
                        if op == deg:
                            deliv[code >> 6] = t + sad - 1 + xd + 2
                            ndel += 1
                        else:
                            st_[b + o_of + op] |= 1 << ov
                    if op != deg:  # the credit spent, the flit onto the channel
                        st_[b + o_cr + op * nv + ov] -= 1
                        ck[sd * cap + cn[sd]] = down[n * npt + op] | ov
                        cc[sd * cap + cn[sd]] = code
                        cn[sd] += 1
                        hops += 1
                if st_[b + R_PM] == 0:
                    actb[wi] &= ~(U1 << np.uint64(n & 63))
        t += 1
    stats[0], stats[1], stats[2], stats[3] = t, hops, visits, ndel
