"""The lean iq path's run (docs/iq-router.md, "Session 18: the lean path"): which runs it
takes (:func:`why_not_lean`, every key it refuses named in one place), the workload's
injections in blocks of cycles, each block one compiled call
(:func:`~mpinet.engine.flit.iq_lean.run_block`), and the record, the general path's bit for
bit (:func:`~mpinet.engine.flit.iq_run.run_iq` chooses it and makes the record).

What the lean state cannot answer goes to the general path, which runs the whole workload
again from its start (the results do not depend on the path, so the record is the general
path's): a run that stops moving (its stall report reads the general state), a routing
error; and ``eng.iq_state``, which the lean path leaves as :class:`RebuiltState`, the
general path's state rebuilt so on its first read. The deadlock look while injecting is not
run: a look finds only packets that are never delivered, so a run it would stop does not
finish here and goes to the general path, which looks and reports as before. A run ending
with packets in flight (``max_steps``) lists them from the lean state (:func:`live`), and
a watch (``mpinet booksim``'s live measurement) caps the blocks and reads them, as on the
general path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from mpinet.engine.flit import iq_blocks as ib
from mpinet.engine.flit import iq_lean as lean
from mpinet.engine.flit import iq_lean_mode
from mpinet.engine.flit import iq_lean_state as ils
from mpinet.engine.flit import iq_step as ist
from mpinet.engine.flit.iq_alloc import INPUT_FIRST, ISLIP, OUTPUT_FIRST
from mpinet.engine.flit.rank_steps import BLOCKS
from mpinet.routing.route_rows import SourceRouted

#: ``eng.steps_path`` of a run on the lean path
LEAN_PATH = "compiled steps (iq router): lean path"
#: the allocators the lean path runs (``iq_lean_alloc``), by their codes
LEAN_ALLOCATORS = (INPUT_FIRST, OUTPUT_FIRST, ISLIP)


def why_not_lean(eng: Any, prm: Any, vrule: tuple) -> str | None:
    """Why the iq run of ``eng`` (its :class:`~mpinet.engine.flit.iq_state.IQParams` ``prm``,
    VC rule ``vrule``) takes the general path, or None: the lean path's keys, each refused by
    name (a later session widens them here)."""
    if not getattr(eng, "iq_lean", True):
        return "asked for (iq_lean = False)"
    return keys_refusal(prm, eng.model.iq)  # (routes walked too, on any rank count)


def keys_refusal(prm: Any, iq: Any) -> str | None:
    """The first key of ``prm`` (its :class:`~mpinet.engine.iq_config.IQConfig` ``iq``) the
    lean path refuses, named, or None: :func:`why_not_lean`'s keys alone, which the memory
    plan reads too (:mod:`mpinet.jobs.plans_iq`)."""
    refused = (
        # (stages of several cycles: batches, "Session 22"; with output speedup and
        # speculation too, and with internal speedup, the batches counted in internal steps,
        # "Session 24"; the three together not: the queues' keys of batches count cycles)
        (
            iq.internal_speedup != 1
            and (
                (prm.osp > 1 and max(prm.rd, prm.vad, prm.sad) > 1)
                or (prm.spec and max(prm.vad, prm.sad) > 1)
            ),
            f"internal_speedup = {iq.internal_speedup} with "
            + ("output speedup" if prm.osp > 1 else "speculation")
            + " and a stage of several cycles",
        ),
        # iSLIP and BookSim's separable allocators ("Session 20"); max_size is refused by name
        # in iq_config, so this holds any other code a later session adds
        (
            prm.vak not in LEAN_ALLOCATORS or prm.sak not in LEAN_ALLOCATORS,
            "an allocator other than iSLIP or separable",
        ),
        (prm.fl > 1 << ils.FS, f"{prm.fl} flits a packet (at most {1 << ils.FS})"),
    )
    for no, why in refused:
        if no:
            return why
    return None


class RebuiltState:
    """``eng.iq_state`` of a lean run: the general path's ``(s, prm, rule, vrule, t)``,
    rebuilt by running the workload again on the general path (``rerun``,
    :func:`~mpinet.engine.flit.iq_run.run_iq`) at its first read (tests read it; nothing else
    does)."""

    def __init__(self, eng: Any, workload: Any, rerun: Callable) -> None:
        self.eng, self.workload, self.rerun, self.got = eng, workload, rerun, None

    def _get(self) -> tuple:
        if self.got is None:
            eng = self.eng
            keep = {k: getattr(eng, k, None) for k in ("steps_path", "calls_path",
                    "block_calls", "live", "msg", "iq_lean")}  # fmt: skip
            eng.iq_lean = False
            try:
                self.rerun(eng, self.workload)
                self.got = eng.iq_state
            finally:
                for k, v in keep.items():
                    setattr(eng, k, v)
                eng.iq_state = self
        return self.got

    def __iter__(self):
        return iter(self._get())

    def __getitem__(self, i):
        return self._get()[i]

    def __len__(self) -> int:
        return 5


def run(eng: Any, workload: Any, prm: Any, tables: tuple, hw: int, rule: tuple,
        vrule: tuple, order: Any, t0: float, rerun: Callable) -> tuple:  # fmt: skip
    """The run on the lean path: ``(record, None)``, or ``(None, why)`` where it goes to the
    general path (``tables``: the state ports' ``nbt, rev, lcount, sport``; ``order``: the
    port order for the record, as :func:`~mpinet.engine.flit.iq_run.run_iq`'s, which is
    ``rerun``: :class:`RebuiltState` runs it)."""
    nnode = prm.nnode
    spd = float(eng.model.iq.internal_speedup)
    s = ils.make_lean(prm, *tables, hw, 1024, speedup=spd)
    last = int(workload.last_injection_step)
    quiet = 64 + 4 * (prm.lat + prm.cd + prm.rd + prm.vad + prm.sad + prm.xd)
    status = np.zeros(12, np.int64)
    win_lo, win_hi = eng.load_window
    delivered, hop_rows, counters, injected = [], [], [], []
    hop = np.empty((max(4096, 4 * nnode * prm.nport) if eng.record_hops else 1, 5), np.int64)
    t, in_flight, n_inj, n_del = -1, 0, 0, 0
    eng.steps_path, eng.calls_path, eng.block_calls = LEAN_PATH, BLOCKS, 0
    block = ib.BLOCK
    walked = isinstance(eng.router, SourceRouted)  # routes walked at a block's start
    mode = iq_lean_mode.block_for(prm, spd)  # (the keys' branches it does not take compiled out)
    watch = eng.watch  # a measurement read while the run goes: its steps cap each block
    while (in_flight > 0 or t < last) and t < eng.max_steps:
        t_end = min(t + block, eng.max_steps, watch.limit(t) if watch else eng.max_steps)
        inj = ib.injections(eng, workload, t, t_end, last, hw, injected)
        if walked:  # into rows, as the general path (the same blocks: BLOCK cycles)
            inj = ib.walk(eng, s, inj, t + 1)
            rule = ib.rule_of(eng.router)  # the table may have grown
        need = int(inj[1].size)
        if int(s.pk_nfree[0]) < need:
            s = ils.grow_packets(s, max(need, s.pk_pid.size))
            if s.pk_pid.size > ils.MAX_SLOTS:
                return None, f"more than {ils.MAX_SLOTS} packets in flight"
        alive = s.pk_pid.size - int(s.pk_nfree[0])
        deliv = np.empty((alive + need + nnode + 1, 7), np.int64)
        rows = np.zeros((t_end - t, 6), np.int64)
        # a small network's busy blocks longer (16,384 packets a block at most: 1.2 MB of
        # slots; meshconfig's mesh at 0.4 paid 64 calls' Python, docs/iq-router.md s. 19)
        if not walked:
            block = ib.next_block(block, need, t_end - t, nnode, 16384)
        start = t
        status[5], status[6], status[7] = in_flight, 0, 0
        while True:
            part = (inj[0][t - start :], *inj[1:])
            eng.block_calls += 1
            lean.run_block(t, t_end, last, win_lo, win_hi, quiet, part, prm, s, rule, vrule,
                           deliv, hop, rows[t - start :], status, mode)  # fmt: skip
            t = int(status[1])
            if status[0] != ist.ROOM:
                break
            delivered.append(deliv[: int(status[6])].copy())
            hop_rows.append(hop[: int(status[7])].copy())
            hop = np.empty((hop.shape[0] * 2, 5), np.int64)
            status[6] = status[7] = 0
        code = int(status[0])
        if code not in (ist.DONE, ist.FINISHED):
            return None, ("stopped moving" if code == ist.STALL else "a routing error")
        delivered.append(deliv[: int(status[6])].copy())
        if eng.record_hops:
            hop_rows.append(hop[: int(status[7])].copy())
        n_inj, n_del = ib.block_rows(eng, rows[: t - start], start, n_inj, n_del, counters)
        in_flight = int(status[5])
        if watch is not None:  # may stop the traffic (and the run) from here on
            now = functools.partial(live, s, prm, t)
            last, eng.max_steps = watch.seen(t, delivered, now, last, eng.max_steps)
    if eng.record_hops and hop_rows:  # the general path's order: by cycle, node and port
        h = np.concatenate(hop_rows)
        h = h[h[:, 0] <= t]  # (heads granted, not yet sent, in a run cut at max_steps)
        hop_rows = [h[np.lexsort((h[:, 4], h[:, 2], h[:, 0]))]]
    if in_flight and watch is not None:  # the look while injecting may find a deadlock
        return None, "packets in flight at the watch's end"  # there (not run here)
    if in_flight:  # the flits granted in the last cycle (or queued: output speedup)
        _, key, snd = _granted(s, prm, t)  # leave after it: not on their links in the run
        key = key[(win_lo <= snd) & (snd < win_hi)]  # (counted as granted)
        up = s.up[key >> 6] // prm.nvc  # their sender's node * nport + output port
        np.subtract.at(s.load, up // prm.nport * prm.deg + up % prm.nport, 1)
    eng.iq_state = RebuiltState(eng, workload, rerun)
    rec = ib.record(eng, s, prm, max(t, 0), counters, delivered, hop_rows, injected,
                     in_flight, t0, None, order, lambda s, prm: live(s, prm, t))  # fmt: skip
    return rec, None


def live(s: ils.LeanArrays, prm: Any, t: int, away: np.ndarray | None = None) -> np.ndarray:
    """(pid, src, dst, at, inj, hops, adm) of each packet not delivered after cycle ``t``,
    as :func:`~mpinet.engine.flit.iq_run._live` lists them: ``at`` the node whose input
    buffers hold its head, else its source; a head granted in cycle ``t`` not yet counted a
    hop (the general path counts it as it leaves, in the next). ``away`` (several ranks):
    the slots whose head left the rank, listed by the head's rank."""
    used = np.ones(s.pk_pid.size, bool)
    used[s.pk_free[: int(s.pk_nfree[0])]] = False
    if away is not None:
        used &= away == 0
    pks = np.flatnonzero(used)
    where = np.full(s.pk_pid.size, -1, np.int64)
    iv, w = ib.ring_items(s.buf, s.hv[:, ils.CNT], s.hv[:, ils.HD], prm.bsz)
    head = (w & lean.KM) == 0  # the heads in input buffers (a packet's head is in one at most)
    where[w[head] >> ils.FS] = prm.lo + iv[head] // (prm.nport * prm.nvc)
    at = np.where(where[pks] >= 0, where[pks], s.pk_src[pks])
    hops = s.pk_hops.copy()
    sent, _, _ = _granted(s, prm, t)
    heads = sent[(sent & lean.KM) == 0] >> ils.FS
    hops[heads] -= 1
    cols = (s.pk_pid[pks], s.pk_src[pks], s.pk_dst[pks], at, s.pk_inj[pks], hops[pks],
            s.pk_adm[pks])  # fmt: skip
    rows = np.stack(cols, axis=1).astype(np.int64).reshape(-1, 7)
    return rows[np.argsort(rows[:, 0], kind="stable")]


def _granted(s: ils.LeanArrays, prm: Any, t: int) -> tuple:
    """The flits granted onto links in cycle ``t`` or before, not yet on them (output queues),
    their keys (``ck``'s) and the cycles they go, from the arrivals' ring."""
    nar, cap = s.cn.size, s.cc.size // s.cn.size
    sent, key, snd = [], [], []
    for j in range(prm.lat + 2, nar):  # arrivals at t + j: sent at t + j - lat - 1 > t
        a, m = (t + j) % nar * cap, int(s.cn[(t + j) % nar])
        sent.append(s.cc[a : a + m])
        key.append(s.ck[a : a + m])
        snd.append(np.full(m, t + j - prm.lat - 1, np.int64))
    sent, key, snd = np.concatenate(sent), np.concatenate(key), np.concatenate(snd)
    link = (key >> 6) % prm.nport != prm.deg  # (not a terminal's flit)
    return sent[link], key[link], snd[link]
