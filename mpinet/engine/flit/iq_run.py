"""The flit engine's run with the iq router (``model.router = "iq"``, docs/iq-router.md):
the workload's injections in blocks of cycles, each block one compiled call
(:func:`~mpinet.engine.flit.iq_step.run_block`), and the engine's
:class:`~mpinet.engine.run.RunRecord` made of its rows.

A packet created at step ``t`` joins its source's queue at cycle ``t`` (BookSim's creation
time, queueing included) and is delivered at the cycle its tail reaches the destination's
terminal; a packet from a node to itself crosses that node's router (as BookSim's do).
The routes are the router's compiled hop rows and the VC policy's compiled rule, as the
ideal model's compiled steps use them (:mod:`mpinet.engine.flit.chunk`). Where every stage
takes one cycle the lean path runs (:mod:`~mpinet.engine.flit.iq_lean_run`), the same record;
``eng.steps_path`` names the path and why.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np

from mpinet.engine.flit import iq_blocks as ib
from mpinet.engine.flit import iq_deadlock, iq_lean_ranks, iq_lean_run, iq_ranks
from mpinet.engine.flit import iq_lists as il
from mpinet.engine.flit import iq_looks as iql
from mpinet.engine.flit import iq_router as ir
from mpinet.engine.flit import iq_state as iqs
from mpinet.engine.flit import iq_step as ist
from mpinet.engine.flit import route_heads as heads
from mpinet.engine.flit.iq_moves import TORUS_TURN
from mpinet.engine.flit.iq_ports import port_order, state_ports
from mpinet.engine.flit.rank_steps import BLOCKS
from mpinet.engine.run import RunRecord, raise_collected
from mpinet.engine.state import neighbor_block
from mpinet.errors import MpinetError
from mpinet.routing import compiled, torus_rings
from mpinet.routing.route_rows import SourceRouted
from mpinet.routing.vc_policies import COUNT_VC

#: the path the iq router's steps take (``mpinet run --json``: switching.steps)
PATH = "compiled steps (iq router)"


class IQUnsupportedError(MpinetError, ValueError):
    """What the iq router model does not run yet (refused before any work)."""


def why_not(eng: Any) -> str | None:
    """Why ``eng``'s run cannot take the iq router, or None."""
    if iq_ranks.why_not(eng) is not None:
        return iq_ranks.why_not(eng)
    if eng.policy.compiled is None and not _torus_dateline(eng.policy):
        pol = eng.model.vc_policy
        return f"model.router = 'iq' needs a compiled VC rule; vc_policy {pol!r} has none"
    if compiled.rule_of(eng.router) is compiled.NO_HOP and not ib.dor_ties(eng.router):
        return f"model.router = 'iq' needs a compiled hop; router {eng.router.name!r} has none"
    if eng.router.header_width > 1:
        return (f"model.router = 'iq': router {eng.router.name!r} carries a header of "
                f"{eng.router.header_width} words (one at most)")  # fmt: skip
    if eng.model.vcs > 64:
        return "model.router = 'iq' runs up to 64 VCs"
    return None


def _torus_dateline(policy: Any) -> bool:
    return policy.name in ("dateline", "dateline-turn") and getattr(policy, "torus", False)


def run_iq(eng: Any, workload: Any) -> RunRecord:
    """Run ``workload`` on ``eng`` (a :class:`~mpinet.engine.flit.engine.FlitEngine`) with
    the iq router; the record as the ideal model's."""
    why = why_not(eng)
    if why is not None:
        raise IQUnsupportedError(why)
    t0 = time.perf_counter()
    eng.msg = None
    topo, iq = eng.topo, eng.model.iq
    nnode, deg = topo.num_nodes, topo.degree
    lo, own = eng.lo, eng.hi - eng.lo  # the links' tables: the rank's nodes' rows
    nbt = neighbor_block(topo, lo, eng.hi).astype(np.int64).reshape(own, deg)
    nodes = np.repeat(np.arange(lo, eng.hi, dtype=np.int64), deg)
    rev = np.asarray(topo.reverse_of(nodes, np.tile(np.arange(deg), own)), np.int64)
    rev = np.where(nbt.ravel() >= 0, rev, 0)
    order = port_order(topo, lo, nbt)  # the state's ports in BookSim's order
    pol = eng.policy
    lcount = np.zeros(own * deg, np.int64)
    if pol.compiled == COUNT_VC:
        links = np.flatnonzero(nbt.ravel() >= 0)
        lcount[links] = pol.counts(lo + links // deg, nbt.ravel()[links])
    vpol = pol.compiled
    if _torus_dateline(pol):  # per link: 2 (dimension + 1) + whether it crosses the dateline
        links = np.flatnonzero(nbt.ravel() >= 0)
        lcount[links] = torus_rings.link_words(topo, lo + links // deg, nbt.ravel()[links],
                                               pol.turn)  # fmt: skip
        vpol = TORUS_TURN if pol.turn else ir.TORUS_DATELINE
    rule = ib.rule_of(eng.router, topo)
    vrule = (np.int64(vpol), np.int64(eng.vcs), lcount)
    hw = eng.router.header_width
    prm = iqs.make_params(nnode, deg, eng.vcs, eng.bsize, eng.flits, iq, eng.record_hops,
                          eng.lo, eng.hi, order.rot)  # fmt: skip
    width = iq_ranks.ROW + max(hw, 1)
    snb, srev, slc, sport = state_ports(order, lo, nbt, rev, lcount)
    lean = iq_lean_run.why_not_lean(eng, prm, vrule)  # the lean path where its keys fit
    if lean is None:
        eng.live = None
        tables, po = (snb, srev, slc, sport), None if order.same() else order
        if eng.size > 1:  # each rank its routers, an exchange a cycle
            rec, lean = iq_lean_ranks.run(eng, workload, prm, tables, hw, rule, vrule, po, t0,
                                          run_iq, nbt)  # fmt: skip
        else:
            rec, lean = iq_lean_run.run(eng, workload, prm, tables, hw, rule, vrule, po, t0,
                                        run_iq)  # fmt: skip
        if rec is not None:
            return rec
    s = iqs.make_arrays(prm, snb, srev, slc, hw, 1024, width, sport)
    ranks = iq_ranks.Ranks(eng, nbt, width, lambda: ib.slot_words(s)) if eng.size > 1 else None
    last = int(workload.last_injection_step)
    order = None if order.same() else order  # mpinet's own: nothing renamed
    look = iq_deadlock.Look(eng, prm, last, order)  # the deadlock look while injecting
    eng.live = look if look.on else None
    quiet = 64 + 4 * (prm.lat + prm.cd + prm.rd + prm.vad + prm.sad + prm.xd)
    acc = np.array([0.0, float(iq.internal_speedup)])
    status = np.zeros(12, np.int64)
    win_lo, win_hi = eng.load_window
    delivered, hop_rows, counters, injected = [], [], [], []
    hop = np.empty((max(4096, 4 * nnode * prm.nport) if eng.record_hops else 1, 5), np.int64)
    t, in_flight, n_inj, n_del = -1, 0, 0, 0
    deadlock = None
    eng.steps_path, eng.calls_path, eng.block_calls = f"{PATH}: general path ({lean})", BLOCKS, 0
    block = ib.BLOCK  # several ranks, or routes walked at a block's start: BLOCK cycles
    grow = ranks is None and not isinstance(eng.router, SourceRouted)
    watch = eng.watch  # a measurement read while the run goes: its steps cap each block
    while (in_flight > 0 or t < last) and t < eng.max_steps:
        t_end = min(t + block, eng.max_steps, watch.limit(t) if watch else eng.max_steps)
        inj = ib.injections(eng, workload, t, t_end, last, hw, injected)
        if isinstance(eng.router, SourceRouted):  # routes walked at injection into rows
            inj = ib.walk(eng, s, inj, t + 1)
            rule = ib.rule_of(eng.router)  # the table may have grown
        if ranks is not None:  # the messages' room for the routes walked (collective)
            ranks.carried.start()
        need = int(inj[1].size) + (ranks.max_in if ranks is not None else 0)
        if int(s.pk_nfree[0]) < need:
            s = iqs.grow_packets(s, max(need, s.pk_pid.size))
        alive = s.pk_pid.size - int(s.pk_nfree[0])
        deliv = np.empty((alive + need + nnode + 1, 7), np.int64)
        rows = np.zeros((t_end - t, 6), np.int64)
        if grow:
            block = ib.next_block(block, int(inj[1].size), t_end - t, own)
        start = t
        status[5], status[6], status[7] = in_flight, 0, 0
        while True:
            k = t - start
            part = (inj[0][k:], *inj[1:])
            args = (t, t_end, last, win_lo, win_hi, quiet, acc, part, prm, s, rule, vrule,
                    deliv, hop, rows[k:])  # fmt: skip
            eng.block_calls += 1  # mpinet run --json: switching.block_calls
            if ranks is None:
                ist.run_block(*args, status, look.arrays)
                if status[0] == iql.NOFIT:  # the look's scan outgrew its scratch: again
                    look.grow()
                    status[0] = iql.one_rank(prm, s, look.arrays)
            else:
                status[1] = t
                ranks.call(args, status, look)
                if ranks.walked:
                    rule = ib.rule_of(eng.router)
            t = int(status[1])
            if status[0] == iql.DEAD:  # dead fronts (or the search left to Python)
                deadlock = look.report(t, int(status[5]))
                if deadlock is not None:
                    _unsent(injected, int(inj[0][-1] - inj[0][t - start]))
                    break
                if ranks is not None:
                    ranks.grow_gather()
            if status[0] in (iql.DEAD, iql.NOFIT) or (status[0] == ist.DONE and t < t_end):
                continue  # a look that found none: the block goes on
            if status[0] != ist.ROOM:
                break
            nd, nh = int(status[6]), int(status[7])
            delivered.append(deliv[:nd].copy())
            if eng.record_hops:
                hop_rows.append(hop[:nh].copy())
                hop = np.empty((hop.shape[0] * 2, 5), np.int64)
            status[6] = status[7] = 0
            if int(s.pk_nfree[0]) < need:  # heads from other ranks took the slots
                s = iqs.grow_packets(s, max(need, s.pk_pid.size))
        nd, nh = int(status[6]), int(status[7])
        delivered.append(deliv[:nd].copy())
        if eng.record_hops:
            hop_rows.append(hop[:nh].copy())
        n_inj, n_del = ib.block_rows(eng, rows[: t - start], start, n_inj, n_del, counters)
        in_flight = int(status[5])
        code = int(status[0])
        if deadlock is not None:  # a look found it while injecting
            break
        if code >= ir.PORT_ERR:  # iq_ranks.FAILED on the others
            if code < iq_ranks.FAILED:
                _routing_error(eng, status)
            raise_collected(eng.comm, eng.msg)
        if code == ist.STALL:  # stopped moving: the wait-for cycle, as the ideal model's
            deadlock = iq_deadlock.report(eng, s, prm, t, in_flight, order)
            break
        if watch is not None:  # may stop the traffic (and the run) from here on
            live = functools.partial(_live, s, prm)
            last, eng.max_steps = watch.seen(t, delivered, live, last, eng.max_steps)
    eng.iq_state = (s, prm, rule, vrule, t)  # what the run left (tests drain it)
    return ib.record(eng, s, prm, max(t, 0), counters, delivered, hop_rows, injected, in_flight,
                     t0, deadlock, order, _live)  # fmt: skip


def _unsent(injected: list, n: int) -> None:
    """Drop the ``n`` ids last drawn from ``injected`` (the block's cycles after a deadlock
    look stopped the run: never injected)."""
    while n > 0 and injected:
        if injected[-1].size <= n:
            n -= injected.pop().size
        else:
            injected[-1] = injected[-1][: injected[-1].size - n]
            n = 0


def _routing_error(eng: Any, status: np.ndarray) -> None:
    code, t, what, node, _pk = (int(x) for x in status[:5])
    node += eng.lo  # (the kernels name the router by its place on the rank)
    if code == ir.PORT_ERR:
        heads.port_error(eng, t, what, node, -1)
    else:
        heads.vc_error(eng, what, node, -1)


def _live(s: Any, prm: Any) -> np.ndarray:
    """(pid, src, dst, at, inj, hops, adm) of each packet not delivered: ``at`` the node
    whose buffers, queues or channel hold its head (its source before it left)."""
    used = np.ones(s.pk_pid.size, bool)
    used[s.pk_free[: int(s.pk_nfree[0])]] = False
    used &= s.pk_away == 0  # its head is on another rank, which lists it
    pks = np.flatnonzero(used)
    at = s.pk_src[pks].copy()
    where = np.full(s.pk_pid.size, -1, np.int64)
    nvc, nport, bsz, fl = prm.nvc, prm.nport, prm.bsz, prm.fl
    iv, f = ib.ring_items(s.ib, s.hv[:, il.IBN], s.hv[:, il.IBH], bsz)
    head = f % fl == 0  # the heads in input buffers (a packet's head is in one at most)
    where[f[head] // fl] = prm.lo + iv[head] // (nport * nvc)
    at = np.where(where[pks] >= 0, where[pks], at)
    cols = (s.pk_pid[pks], s.pk_src[pks], s.pk_dst[pks], at, s.pk_inj[pks], s.pk_hops[pks],
            s.pk_adm[pks])  # fmt: skip
    rows = np.stack(cols, axis=1).astype(np.int64).reshape(-1, 7)
    return rows[np.argsort(rows[:, 0], kind="stable")]
