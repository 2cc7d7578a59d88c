"""The flit engine's step through Python (the step-by-step path, :mod:`~mpinet.engine.flit.engine`
when no compiled steps run it): one step's kernels called from Python, the exchange of flits
and credits with other ranks, and the message of a model violation.

Why apart from the engine: the engine's run loop and its compiled paths are a module's worth;
this is the reference path the tests hold the compiled steps to, and its exchange.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.comm import sum_op
from mpinet.engine.exchange import exchange_packets
from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import state as fs
from mpinet.engine.flit import step_end
from mpinet.engine.flit.park import credits_in


def step(eng: Any, t: int) -> tuple[int, int, int]:
    """One step of ``eng`` (:class:`~mpinet.engine.flit.engine.FlitEngine`) through Python:
    ``(flits moved, packets delivered, flits that crossed ranks)``; the heads that reached a
    node are left in ``eng._routing``, routed with the step's injections."""
    st, prm = eng.st, eng.prm
    if t % 8 == 0:  # buffers in id order: a step then walks links and buffers in order
        st.act[: int(st.nact[0])].sort()
    nact = int(st.nact[0])
    st.reserve(nact + 1, 0)
    so = eng._scratch(nact + 1)
    segs, pkts, links, bufs = st.segs, st.pkts, st.links, st.bufs
    nt = fk.collect(prm, segs, pkts, links, bufs, so)
    sdc_port = -1
    if eng.kind == fk.SDC:  # the port most in demand over all ranks
        first = np.empty(nt, np.int64)
        demand = fk.sdc_demand(nt, prm, segs, pkts, links, so, first)
        total = np.empty_like(demand)
        eng.comm.Allreduce(demand, total, op=sum_op())
        sdc_port = int(fk.sdc_port(total))
        fk.choose_links(nt, prm, segs, pkts, so, first, sdc_port)
    else:
        fk.port_model(nt, prm, segs, pkts, links, so, sdc_port)
    cnt = so.cnt
    cnt[:] = 0
    win = eng.load_window[0] <= t < eng.load_window[1]
    fk.move(t, nt, win, prm, segs, pkts, links, bufs, so)
    nnew = step_end.settle(nt, sdc_port, prm, segs, pkts, links, bufs, so)
    if so.out[0]:
        violation(eng, t, so.out, sdc_port)
    ndel = int(cnt[fk.C_DELIV])
    if ndel:
        eng.delivered.append(so.deliv[:ndel].copy())
    if eng.record_hops and cnt[fk.C_HOPS]:
        eng.hop_rows.append(so.hop[: int(cnt[fk.C_HOPS])].copy())
    new_local = so.new[:nnew]
    if eng.size > 1:
        wire = so.wire[: int(cnt[fk.C_WIRE])]
        new_remote = exchange(eng, t, wire, so.cred_r[: int(cnt[fk.C_CRED_R])], sdc_port)
        new_local = np.concatenate([new_local, new_remote])
    eng._routing = new_local  # routed with the injections
    return int(cnt[fk.C_FLITS]), ndel, int(cnt[fk.C_CROSS])


def exchange(eng: Any, t: int, wire: np.ndarray, cred: np.ndarray, sdc_port: int) -> np.ndarray:
    """Flits to other ranks and credits back; returns the segments the heads opened."""
    st = eng.st
    span = eng.deg * eng.vcs
    owner = np.searchsorted(eng.bounds * span, wire[:, fk.W_BUF], side="right") - 1
    credits = np.repeat(cred[:, 0], cred[:, 1])
    cowner = np.searchsorted(eng.bounds * span, credits, side="right") - 1
    rows, back = exchange_packets(eng.comm, np.ascontiguousarray(wire), owner, credits,
                                  cowner)  # fmt: skip
    if back.size:  # a parked body woken as by a local credit (park.py)
        credits_in(np.ascontiguousarray(back - eng.lo * span, dtype=np.int64), st.credit,
                   st.pwait, st.inact, st.act, st.nact)  # fmt: skip
    if rows.shape[0] == 0:
        return np.empty(0, np.int64)
    nheads = int(rows[:, fk.W_HEAD].sum())
    st.reserve(nheads + 1, nheads + 1)
    new = np.empty(nheads + 1, np.int64)
    err = np.zeros(2, np.int64)
    nn = step_end.receive(rows, eng.prm, st.segs, st.pkts, st.bufs, new, err)
    if err[0] and eng.msg is None:
        eng.msg = f"flit engine: flits of packet {int(err[1])} arrived without their head"
    bufs = np.ascontiguousarray(rows[:, fk.W_BUF] - eng.lo * span)
    fs.activate(bufs, st.bufs)
    out = np.zeros(2, np.int64)  # the buffers filled from other ranks, checked as the rest
    step_end.check_step(0, sdc_port, eng.prm, st.links, st.bufs, bufs, bufs.size, bufs, out)
    if out[0]:
        violation(eng, t, out, sdc_port)
    return new[:nn]


def violation(eng: Any, t: int, out: np.ndarray, sdc_port: int) -> None:
    """The message of a model violation :func:`~mpinet.engine.flit.step_end.check_step`
    found (the first one of the run)."""
    if eng.msg is not None:
        return
    code, where = int(out[0]), int(out[1])
    if code == step_end.BUFFER:
        node, port = divmod(where // eng.vcs, eng.deg)
        what = f"VC {where % eng.vcs} of port {eng.topo.ports[port]} holds more than "
        what += f"vc_buffer = {eng.bsize} flits"
    else:
        node, port = divmod(where, eng.deg)
        what = {
            step_end.CAPACITY: f"more flits than the capacity {int(eng.caps[port])} of the link",
            step_end.PORTS: f"more than {eng.model.k} ports used",
            step_end.SDC_PORT: f"ports other than {sdc_port} in one step",
        }[code]
    eng.msg = (
        f"model {eng.model.name} ({eng.model.switching}) violated in step {t} at node "
        f"{eng.topo.label(node + eng.lo)}, port {eng.topo.ports[port]}: {what}"
    )
