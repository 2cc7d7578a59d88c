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


@njit(cache=True, error_model="numpy")
def gather_heads(heads, ipid, isrc, idst, ihdr, prm, segs, pkts, cur, dst, pid, hops, state,
                 hdr):  # fmt: skip
    """The router's inputs: the heads of segments ``heads`` (at the node of their buffer),
    then the injected packets ``ipid`` (at their source, no hops, state 0)."""
    na = heads.shape[0]
    hw = pkts.hdr.shape[1]
    span = prm.deg * prm.nvc
    for i in range(na):
        s = heads[i]
        p = segs.pkt[s]
        cur[i] = buffer_node(segs.buf[s], span, prm.lo)
        dst[i] = pkts.dst[p]
        pid[i] = pkts.pid[p]
        hops[i] = segs.hops[s]
        state[i] = pkts.state[p]
        for c in range(hw):
            hdr[i, c] = pkts.hdr[p, c]
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
def set_routes(heads, links, lo_v, hi_v, new_hdr, state, segs, pkts):
    """Write the router's and the policy's decisions for the heads of ``heads``."""
    hw = pkts.hdr.shape[1]
    for i in range(heads.shape[0]):
        s = heads[i]
        p = segs.pkt[s]
        segs.out[s] = links[i]
        segs.vlo[s] = lo_v[i]
        segs.vhi[s] = hi_v[i]
        pkts.state[p] = state[i]
        for c in range(hw):
            pkts.hdr[p, c] = new_hdr[i, c]


@njit(cache=True)
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
