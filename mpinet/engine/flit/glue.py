"""The flit step's compiled glue: what ran as a dozen small numpy calls between the kernels.

A step of the flit engine calls the router once (numpy, vectorized over the heads); the
rest of its bookkeeping is here, one compiled call each, because at a few thousand
requests per step the fixed cost of a numpy call (about a microsecond) and of a kernel's
dispatch (about 0.1 microsecond per argument) were a fifth of the engine's time
(docs/performance.md, "The flit engine"):

* :func:`settle`: after :func:`~mpinet.engine.flit.kernels.move`, the heads that reached
  a local node, the buffers that received flits made active, the step finished
  (:func:`~mpinet.engine.flit.kernels.finish`) and the model checked on the links and the
  local buffers (:func:`~mpinet.engine.flit.kernels.check_step`);
* :func:`gather_heads` and :func:`set_routes`: the router's inputs for the heads that
  reached a node and the packets injected, and its decisions written back.
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit import kernels as fk
from mpinet.prefetch import prefetch


@njit(cache=True, error_model="numpy")
def settle(nloc, nrel, ncl, ndrain, nt, sdc_port, local, rel, cred_l, drain, held, credit,
           seg_cnt, seg_recv, seg_next, seg_buf, seg_pkt, seg_out, bhead, btail, bocc, seg_free,
           nfree, pkt_nseg, pkt_free, npfree, inact, act, nact, touched, lflits, lcap, deg, kind,
           k, bsize, bufs, out, new_local):  # fmt: skip
    """The end of the step on this rank; returns the number of ``new_local`` heads.

    ``new_local``: the segments opened by heads that reached a local node (not routed yet:
    ``seg_out = -1``); ``bufs``: scratch for the buffers checked; ``out`` as
    :func:`~mpinet.engine.flit.kernels.check_step`.
    """
    nn = 0
    for i in range(nloc):
        if i + 8 < nloc:  # the arrivals' segments and buffers, scattered: ahead of use
            prefetch(seg_out, local[i + 8, fk.LA_SEG])
            prefetch(inact, local[i + 8, fk.LA_BUF])
        s, b = local[i, fk.LA_SEG], local[i, fk.LA_BUF]
        if seg_out[s] == -1:
            new_local[nn] = s
            nn += 1
        bufs[i] = b
        if inact[b] == 0:
            inact[b] = 1
            act[nact[0]] = b
            nact[0] += 1
    fk.finish(nloc, local, nrel, rel, held, ncl, cred_l, credit, ndrain, drain, seg_cnt, seg_recv,
              seg_next, seg_buf, seg_pkt, bhead, btail, bocc, seg_free, nfree, pkt_nseg,
              pkt_free, npfree)  # fmt: skip
    fk.check_step(nt, touched, lflits, lcap, deg, kind, k, sdc_port, nloc, bufs, bocc, bsize,
                  out)  # fmt: skip
    return nn


@njit(cache=True, error_model="numpy")
def gather_heads(segs, ipid, isrc, idst, ihdr, seg_pkt, seg_buf, seg_hops, pkt_dst, pkt_pid,
                 pkt_hdr, pkt_state, span, lo, cur, dst, pid, hops, state, hdr):  # fmt: skip
    """The router's inputs: the heads of ``segs`` (at the node of their buffer), then the
    injected packets ``ipid`` (at their source, no hops, state 0)."""
    na = segs.shape[0]
    hw = pkt_hdr.shape[1]
    for i in range(na):
        s = segs[i]
        p = seg_pkt[s]
        cur[i] = seg_buf[s] // span + lo
        dst[i] = pkt_dst[p]
        pid[i] = pkt_pid[p]
        hops[i] = seg_hops[s]
        state[i] = pkt_state[p]
        for c in range(hw):
            hdr[i, c] = pkt_hdr[p, c]
    for i in range(ipid.shape[0]):
        j = na + i
        cur[j] = isrc[i]
        dst[j] = idst[i]
        pid[j] = ipid[i]
        hops[j] = 0
        state[j] = 0
        for c in range(hw):
            hdr[j, c] = ihdr[i, c]


@njit(cache=True, error_model="numpy")
def set_routes(segs, links, lo_v, hi_v, new_hdr, state, seg_pkt, seg_out, seg_vlo, seg_vhi,
               pkt_hdr, pkt_state):  # fmt: skip
    """Write the router's and the policy's decisions for the heads of ``segs``."""
    hw = pkt_hdr.shape[1]
    for i in range(segs.shape[0]):
        s = segs[i]
        p = seg_pkt[s]
        seg_out[s] = links[i]
        seg_vlo[s] = lo_v[i]
        seg_vhi[s] = hi_v[i]
        pkt_state[p] = state[i]
        for c in range(hw):
            pkt_hdr[p, c] = new_hdr[i, c]


@njit(cache=True)
def links_of(cur, ports, lo, deg, nbt, links, nxt):
    """The local link of each (node, port) and the node it leads to; returns the first
    index whose port is out of range or has no link there, -1 if none."""
    bad = -1
    for i in range(cur.shape[0]):
        q = ports[i]
        ok = 0 <= q < deg
        link = (cur[i] - lo) * deg + (q if ok else 0)
        links[i] = link
        nxt[i] = nbt[link]
        if bad < 0 and (not ok or nbt[link] < 0):
            bad = i
    return bad


@njit(cache=True)
def vc_ranges(nxt, dst, lo_v, hi_v, state, new, vcs):
    """Keep the policy's state across a hop into the destination (no VC is taken there)
    into ``new``; returns the first other hop whose VC range is empty or outside
    ``0..vcs - 1``, -1 if none."""
    bad = -1
    for i in range(nxt.shape[0]):
        if nxt[i] == dst[i]:
            new[i] = state[i]
        elif bad < 0 and (lo_v[i] < 0 or hi_v[i] > vcs or lo_v[i] >= hi_v[i]):
            bad = i
    return bad
