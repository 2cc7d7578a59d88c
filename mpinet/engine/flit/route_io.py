"""The router's inputs and its decisions, compiled: what ran as a dozen small numpy calls
around the router's call in a flit step.

:func:`gather_heads` lists, for the heads that reached a node and the packets injected,
where they are, where they go and what they carry; :func:`links_of` and :func:`vc_ranges`
check the router's ports and the VC policy's ranges; :func:`set_routes` writes the
decisions back. Both step paths use them: :mod:`~mpinet.engine.flit.route_heads` around the
router's vectorized ``next_port``, :mod:`~mpinet.engine.flit.chunk` around its compiled hop.
"""

from __future__ import annotations

from numba import njit

from mpinet.engine.flit.layout import buffer_node, link_id


@njit(cache=True, error_model="numpy", _nrt=False)
def gather_heads(heads, ipid, isrc, idst, ihdr, prm, segs, pkts, cur, dst, pid, hops, state,
                 hdr):  # fmt: skip
    """The router's inputs: the heads of segments ``heads`` (at the node of their buffer),
    then the injected packets ``ipid`` (at their source, no hops, state 0)."""
    na = heads.shape[0]
    pkt_hdr, seg_pkt, seg_buf, seg_hops = pkts.hdr, segs.pkt, segs.buf, segs.hops
    pkt_dst, pkt_pid, pkt_state = pkts.dst, pkts.pid, pkts.state
    hw = pkt_hdr.shape[1]
    span, lo = prm.deg * prm.nvc, prm.lo
    for i in range(na):
        s = heads[i]
        p = seg_pkt[s]
        cur[i] = buffer_node(seg_buf[s], span, lo)
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


@njit(cache=True, error_model="numpy", _nrt=False)
def set_routes(heads, links, lo_v, hi_v, new_hdr, state, segs, pkts):
    """Write the router's and the policy's decisions for the heads of ``heads``."""
    pkt_hdr, pkt_state, seg_pkt = pkts.hdr, pkts.state, segs.pkt
    seg_out, seg_vlo, seg_vhi = segs.out, segs.vlo, segs.vhi
    hw = pkt_hdr.shape[1]
    for i in range(heads.shape[0]):
        s = heads[i]
        p = seg_pkt[s]
        seg_out[s] = links[i]
        seg_vlo[s] = lo_v[i]
        seg_vhi[s] = hi_v[i]
        pkt_state[p] = state[i]
        for c in range(hw):
            pkt_hdr[p, c] = new_hdr[i, c]


@njit(cache=True, _nrt=False)
def links_of(cur, ports, lo, deg, nbt, links, nxt):
    """The local link of each (node, port) and the node it leads to; returns the first
    index whose port is out of range or has no link there, -1 if none."""
    bad = -1
    for i in range(cur.shape[0]):
        q = ports[i]
        ok = 0 <= q < deg
        link = link_id(cur[i], q if ok else 0, lo, deg)
        links[i] = link
        nxt[i] = nbt[link]
        if bad < 0 and (not ok or nbt[link] < 0):
            bad = i
    return bad


@njit(cache=True, _nrt=False)
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
