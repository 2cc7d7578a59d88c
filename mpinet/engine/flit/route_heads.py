"""The flit engine's routing step by step: the heads that reached a node and the step's
injections, routed by one vectorized router call and one VC-policy call per step.

:mod:`mpinet.engine.flit.chunk` does the same inside its compiled steps where it can (one
rank, all-port, compiled hops); the error messages of both are made here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.flit import route_io
from mpinet.engine.flit import state as fs
from mpinet.engine.run import Workload
from mpinet.routing.base import HopContext

_NONE = np.empty(0, np.int64)


def route(eng: Any, segs: np.ndarray, t: int, inj: tuple | None = None) -> None:
    """Decide the next port (and the VCs its policy allows) of the heads that reached a
    node in step ``t`` and of the packets injected at ``t``, in one router call (a call
    costs tens of microseconds however few packets it routes); open the injected
    packets' source segments. ``inj``: (ids, sources, destinations, headers)."""
    if eng.msg is not None:
        return
    st = eng.st
    na = segs.size
    if inj is None:
        inj = (_NONE, _NONE, _NONE, np.empty((0, st.hw), np.int64))
    m = na + inj[0].size
    if m == 0:
        return
    cur, dst, pid, hops, state = np.empty((5, m), np.int64)
    hdr = np.empty((m, st.hw), np.int64)
    route_io.gather_heads(segs, inj[0], inj[1], inj[2], inj[3], eng.prm, st.segs, st.pkts, cur,
                          dst, pid, hops, state, hdr)  # fmt: skip
    ctx = HopContext(step=t + 1, pids=pid, hops=hops, seed=eng.seed)
    ports, new = eng.router.next_port(cur, dst, hdr, ctx)
    ports = np.asarray(ports, dtype=np.int64)
    found = _links(eng, cur, ports, pid, t)
    if found is None:
        return
    links, nxt = found
    lo_v, hi_v, state = _vcs(eng, cur, nxt, hops, state, dst)
    new = np.ascontiguousarray(new, np.int64).reshape(m, st.hw)
    route_io.set_routes(segs, links, lo_v, hi_v, new, state, st.segs, st.pkts)
    if m == na:
        return
    st.reserve(m - na, m - na)
    fs.open_sources(inj[0], inj[1], inj[2], t, new[na:], ports[na:], lo_v[na:], hi_v[na:],
                    state[na:], eng.prm, st.segs, st.pkts, st.bufs)  # fmt: skip


def _links(eng: Any, cur, ports, pids, t: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Local link of each (node, port) and its far end; None (and the message set) if
    a port is invalid."""
    links, nxt = np.empty(cur.size, np.int64), np.empty(cur.size, np.int64)
    i = route_io.links_of(cur, ports, eng.lo, eng.deg, eng.st.nbt, links, nxt)
    if i >= 0:
        port_error(eng, t, int(ports[i]), int(cur[i]), int(pids[i]))
        return None
    return links, nxt


def port_error(eng: Any, t: int, port: int, node: int, pid: int) -> None:
    """The message of a router's port with no link (the first error of the run)."""
    eng.msg = eng.msg or (
        f"step {t}: router {eng.router.name} chose port {port} at node "
        f"{eng.topo.label(node)} for packet {pid}, which has no link "
        f"there (valid ports are 0..{eng.deg - 1} with a neighbour)"
    )


def vc_error(eng: Any, vc: int, node: int, hops: int) -> None:
    """The message of a VC the policy needs above ``vcs`` (the first error of the run)."""
    eng.msg = eng.msg or (
        f"vc_policy {eng.model.vc_policy!r} needs VC {vc} for a hop from "
        f"{eng.topo.label(node)} after {hops} hops, but vcs = "
        f"{eng.vcs} (VCs 0..{eng.vcs - 1}); raise model.vcs"
    )


def _vcs(eng: Any, cur, nxt, hops, state, dst):
    """The policy's VC range for the hop ``cur -> nxt`` (no VC for a hop into ``dst``)."""
    words = getattr(eng.policy, "state_words", 0)  # one word at most (negative-hop)
    lo_v, hi_v, new = eng.policy.hop(cur, nxt, hops, state.reshape(-1, 1)[:, :words], dst=dst)
    lo_v = np.ascontiguousarray(lo_v, np.int64)
    hi_v = np.ascontiguousarray(hi_v, np.int64)
    new = np.array(new, np.int64)[:, 0] if words else state.copy()
    i = route_io.vc_ranges(nxt, dst, lo_v, hi_v, state, new, eng.vcs)
    if i >= 0:
        vc_error(eng, int(lo_v[i]), int(cur[i]), int(hops[i]))
    return lo_v, hi_v, new


def inject(eng: Any, workload: Workload, step: int) -> tuple[int, int]:
    """Packets generated at ``step``: routed at their source with the step's arrivals
    and queued there; returns (injected, delivered at once: source = destination)."""
    segs, eng._routing = eng._routing, np.empty(0, np.int64)
    if step > workload.last_injection_step:
        route(eng, segs, step)
        return 0, 0
    pid, src, dst = (
        np.asarray(a, dtype=np.int64) for a in workload.injections(eng.lo, eng.hi, step)
    )
    if pid.size == 0:
        route(eng, segs, step)
        return 0, 0
    eng.injected.append(pid)
    pid, src, dst, hdr, home = queued(eng, workload, step, pid, src, dst)
    n_home = home[0].size
    if n_home:
        rec = np.zeros((n_home, 7), dtype=np.int64)
        rec[:, 0], rec[:, 1], rec[:, 2] = home
        rec[:, 3] = rec[:, 4] = rec[:, 6] = step
        eng.delivered.append(rec)
    if pid.size == 0 or eng.msg is not None:
        route(eng, segs, step)
        return int(eng.injected[-1].size), n_home
    route(eng, segs, step, (pid, src, dst, hdr))
    return int(eng.injected[-1].size), n_home


def queued(eng: Any, workload: Workload, step: int, pid, src, dst) -> tuple:
    """The packets injected at ``step`` as their source queues take them: ``(ids, sources,
    destinations, headers, home)``, in id order (a source queue is (step, id) ordered), with
    ``home`` the (ids, sources, destinations) of those injected at their destination,
    delivered at once. Also the compiled steps' (:mod:`mpinet.engine.flit.chunk`)."""
    is_home = src == dst
    home = (pid[is_home], src[is_home], dst[is_home])
    if is_home.any():
        pid, src, dst = pid[~is_home], src[~is_home], dst[~is_home]
    if pid.size > 1 and not (pid[1:] > pid[:-1]).all():
        order = np.argsort(pid, kind="stable")
        pid, src, dst = pid[order], src[order], dst[order]
    if hasattr(workload, "headers"):
        hdr = workload.headers(pid, src, dst, step) if pid.size else np.empty((0, eng.st.hw))
    else:
        hdr = eng.router.init_headers(src, dst)
    hdr = np.ascontiguousarray(np.asarray(hdr, dtype=np.int64).reshape(pid.size, eng.st.hw))
    return pid, src, dst, hdr, home
