"""The routing of a step's heads and injections inside the compiled steps.

:func:`route` routes the heads that reached a node of the rank and the packets injected at
the step as :func:`mpinet.engine.flit.route_heads.route` does, with the router's and the VC
policy's vectorized calls replaced by their compiled rules (:mod:`mpinet.routing.compiled`,
:attr:`~mpinet.routing.vc_policies.VCPolicy.compiled`), and opens the injected packets'
source segments. Its callers: the one-rank steps (:func:`~mpinet.engine.flit.chunk.run_steps`,
which inlines :func:`route_in`) and the several-rank steps and blocks
(:mod:`~mpinet.engine.flit.ranks`, :mod:`~mpinet.engine.flit.rank_loop`). Why apart from
``chunk``: the steps' loop and the Python that drives it are a module's worth already.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mpinet.engine.flit import route_io
from mpinet.engine.flit import state as fs
from mpinet.routing import compiled
from mpinet.routing.vc_policies import ANY_VC, HOPS_VC

#: the routing errors' codes in ``status[0]`` (:mod:`~mpinet.engine.flit.chunk`'s codes)
PORT_ERR, VC_ERR = 5, 6


@njit(cache=True, error_model="numpy", inline="always")
def _vc_range(vpol, vcs, count, hops, state):
    """``(lo, hi, state after)`` of a hop under the compiled VC rule."""
    if vpol == ANY_VC:
        return 0, vcs, state
    if vpol == HOPS_VC:
        return hops, hops + 1, state
    s = state + count  # COUNT_VC
    return s, s + 1, s


@njit(cache=True, inline="always")
def _fail(status, code, t, a, b, c):
    """A routing error for :meth:`Steps._error`: ``status[:5] = (code, t, a, b, c)``; False."""
    status[0], status[1], status[2], status[3], status[4] = code, t, a, b, c
    return False


@njit(cache=True, error_model="numpy")
def route(t, nnew, ni, ia, inj, rule, vrule, prm, segs, pkts, links, bufs, so, status):
    """Route the ``nnew`` heads that reached a node and the ``ni`` packets injected at ``t``
    (rows ``ia..`` of the injections) as :func:`mpinet.engine.flit.route_heads.route` does,
    with the router's and the policy's calls replaced by their compiled rules; open the
    injected packets' source segments. Returns False (``status`` set) on a routing error:
    first an invalid port among all, else the first VC range out of bounds. In the step's
    scratch (``so.route``, ``so.rhdr``), or in arrays of its own when it has not room."""
    m = nnew + ni
    if m == 0:  # most steps of a lightly loaded network: nothing to route
        return True
    if m <= so.route.shape[1]:
        return route_in(t, nnew, ni, ia, inj, rule, vrule, prm, segs, pkts, links, bufs, so,
                      status, so.route, so.rhdr)  # fmt: skip
    sc, hdr = np.empty((11, m), np.int64), np.empty((m, pkts.hdr.shape[1]), np.int64)
    return route_in(t, nnew, ni, ia, inj, rule, vrule, prm, segs, pkts, links, bufs, so, status,
                  sc, hdr)  # fmt: skip


@njit(cache=True, error_model="numpy", _nrt=False, forceinline=True)
def route_in(t, nnew, ni, ia, inj, rule, vrule, prm, segs, pkts, links, bufs, so, status, sc,
           hdr):  # fmt: skip
    """:func:`route` in the scratch ``sc`` (11 rows of at least ``nnew + ni`` words) and
    ``hdr``; no reference counting (allocates nothing: :mod:`~mpinet.engine.flit.kernels`)."""
    code, rprm, ta, tb = rule
    vpol, vcs, lcount = vrule
    hw = pkts.hdr.shape[1]
    m = nnew + ni
    heads, ib = so.new[:nnew], ia + ni
    ipid, isrc, idst, ihdr = inj.pid[ia:ib], inj.src[ia:ib], inj.dst[ia:ib], inj.hdr[ia:ib]
    cur, dst, pid, hops, state, ports = (
        sc[0, :m],
        sc[1, :m],
        sc[2, :m],
        sc[3, :m],
        sc[4, :m],
        sc[5, :m],
    )
    lk, nxt, lo_v, hi_v, after, hdr = (
        sc[6, :m],
        sc[7, :m],
        sc[8, :m],
        sc[9, :m],
        sc[10, :m],
        hdr[:m],
    )
    route_io.gather_heads(heads, ipid, isrc, idst, ihdr, prm, segs, pkts, cur, dst, pid, hops,
                          state, hdr)  # fmt: skip
    for i in range(m):  # the router's rule
        if i + 8 < m:  # the rule's table entry, a cache miss, eight heads ahead
            compiled.touch(code, rprm, ta, cur[i + 8], dst[i + 8])
        ports[i], h2 = compiled.hop(code, rprm, ta, tb, cur[i], dst[i], hdr[i, 0] if hw else 0)
        if hw:
            hdr[i, 0] = h2
    i = route_io.links_of(cur, ports, prm.lo, prm.deg, links.nbt, lk, nxt)
    if i >= 0:
        return _fail(status, PORT_ERR, t, ports[i], cur[i], pid[i])
    for i in range(m):  # the policy's rule
        lo_v[i], hi_v[i], after[i] = _vc_range(vpol, vcs, lcount[lk[i]], hops[i], state[i])
    bad = route_io.vc_ranges(nxt, dst, lo_v, hi_v, state, after, vcs)
    route_io.set_routes(heads, lk, lo_v, hi_v, hdr, after, segs, pkts)
    if ni:
        fs.open_sources(ipid, isrc, idst, t, hdr[nnew:], ports[nnew:], lo_v[nnew:], hi_v[nnew:],
                        after[nnew:], prm, segs, pkts, bufs)  # fmt: skip
    if bad >= 0:
        return _fail(status, VC_ERR, t, lo_v[bad], cur[bad], hops[bad])
    return True
