"""Which blocked fronts can never move again, and one wait-for cycle among them.

A generic description of one step's state, so that the packet engine (input
buffers of links) and the flit engine (virtual channels) share one search. A
*buffer* is anything with a bounded number of slots; a *front* is a queue head
(a packet, or a worm's head) that moves only when one buffer has a slot for it.
Every rank passes its part:

* ``fronts`` (F,) int64: global ids of the fronts this rank owns (each front is
  listed by exactly one rank, its owner); ``waits`` (F,): the buffer each one
  waits for, or -1 when it is not waiting for a buffer (it can move);
* ``hold_front``, ``hold_buffer`` (H,): "a slot of this buffer frees only when
  this front moves" (a packet of the buffer sits at or behind the front), on any
  rank; a front named here that no rank lists counts as able to move;
* ``closed`` (C,): buffers that are full *and* whose every occupant is covered
  by the hold edges, on any rank. A buffer not closed may free a slot.

The **dead** fronts are the largest set D such that every front of D waits for
a closed buffer all of whose holders are in D. Such fronts never move again,
whatever happens elsewhere: their buffers free a slot only when a front of D
moves, and injection only adds packets behind them. Every other front is
*live*: it can move, or it waits (through a chain) for one that can. D is the
complement of the live set, found by spreading liveness from the fronts that
can move and the buffers that are not closed (linear in the edges; across ranks
one exchange per round, a round per rank boundary a chain of liveness crosses).
D is not empty if and only if there is a deadlock, and then it holds a cycle:
each dead front waits for a dead buffer, whose holders are dead fronts.
:func:`walk_cycle` names one. Both results depend only on the union of what the
ranks pass, never on the partition.

Ownership is given by two functions from ids to ranks: ``front_owner`` (the
rank listing the front) and ``buffer_owner`` (any fixed rank per buffer; the
one where it is cheapest to compute).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba as nb
import numpy as np

from mpinet.engine.comm import resolve, sum_op
from mpinet.engine.exchange import exchange_rows
from mpinet.engine.waitfor_live import live_fronts, new_scratch

#: a walk stops after this many fronts (cycles are short; the tail to one is too)
MAX_WALK = 10_000

Owner = Callable[[np.ndarray], np.ndarray]

_FRONT, _BUFFER = 0, 1  # kinds of the messages "this front / buffer is live"


@nb.njit(cache=True, nogil=True)
def _spread(f_live, b_live, fstack, nf, bstack, nb_, w_ptr, w_loc, w_id, w_own,
            h_ptr, h_loc, h_id, h_own, me, out_kind, out_id, out_dst, nout):  # fmt: skip
    """Spread liveness from the fronts ``fstack[:nf]`` and buffers ``bstack[:nb_]``.

    A live buffer makes the fronts waiting for it live (``w_*``: per local
    buffer, CSR); a live front makes the buffers it holds live (``h_*``: per
    local front). Local ids (``*_loc`` >= 0) are marked at once; others become
    messages to their owners. Returns the number of messages in ``out_*``.
    """
    while nf > 0 or nb_ > 0:
        if nb_ > 0:
            nb_ -= 1
            i = bstack[nb_]
            for k in range(w_ptr[i], w_ptr[i + 1]):
                j = w_loc[k]
                if j >= 0:
                    if not f_live[j]:
                        f_live[j] = True
                        fstack[nf] = j
                        nf += 1
                else:
                    out_kind[nout], out_id[nout], out_dst[nout] = _FRONT, w_id[k], w_own[k]
                    nout += 1
        else:
            nf -= 1
            j = fstack[nf]
            for k in range(h_ptr[j], h_ptr[j + 1]):
                i = h_loc[k]
                if i >= 0:
                    if not b_live[i]:
                        b_live[i] = True
                        bstack[nb_] = i
                        nb_ += 1
                elif h_own[k] != me:
                    out_kind[nout], out_id[nout], out_dst[nout] = _BUFFER, h_id[k], h_own[k]
                    nout += 1
    return nout


def _csr(keys: np.ndarray, vals: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pointers into ``vals`` sorted by ``keys``, per entry of the sorted ``index``."""
    order = np.argsort(keys, kind="stable")
    ptr = np.searchsorted(keys[order], index, side="left")
    ptr = np.append(ptr, keys.size).astype(np.int64)
    return ptr, vals[order]


def _local(ids: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Index of each id in the sorted ``table``, -1 where absent."""
    if table.size == 0:
        return np.full(ids.size, -1, dtype=np.int64)
    i = np.minimum(np.searchsorted(table, ids), table.size - 1)
    return np.where(table[i] == ids, i, -1).astype(np.int64)


def _ship(comm: Any, rows: np.ndarray, owner: np.ndarray) -> np.ndarray:
    if comm.Get_size() == 1:
        return rows
    return exchange_rows(comm, np.ascontiguousarray(rows, dtype=np.int64), owner)


def dead_fronts(
    comm: Any,
    fronts: np.ndarray,
    waits: np.ndarray,
    hold_front: np.ndarray,
    hold_buffer: np.ndarray,
    closed: np.ndarray,
    front_owner: Owner,
    buffer_owner: Owner,
) -> np.ndarray:
    """Which of this rank's ``fronts`` are dead (bool, in their order); collective.

    See the module docstring for the description and the definition. Cost:
    O(F + H + C) per rank, plus one exchange and one ``allreduce`` per round
    on more than one rank.
    """
    comm = resolve(comm)
    i64 = np.int64
    fronts, waits = np.asarray(fronts, i64), np.asarray(waits, i64)
    hold_front, hold_buffer = np.asarray(hold_front, i64), np.asarray(hold_buffer, i64)
    closed = np.asarray(closed, i64)
    if comm.Get_size() == 1:  # everything is local: one compiled pass (a flit run searches
        # every 16 steps, and the numpy of the general path was 7 % of such a run)
        return dead_one_rank(fronts, waits, hold_front, hold_buffer, closed)
    return _dead_spread(comm, fronts, waits, hold_front, hold_buffer, closed, front_owner,
                        buffer_owner)  # fmt: skip


@nb.njit(cache=True, nogil=True)
def dead_one_rank(fronts, waits, hold_front, hold_buffer, closed):
    """:func:`dead_fronts` when one rank passes everything: the same definition (the
    buffers nobody waits for play no part; a holder nobody lists can move), by
    :func:`~mpinet.engine.waitfor_live.live_fronts` in scratch made here. Compiled, so
    the flit engine's blocks on several ranks call it on their gathered union
    (:mod:`mpinet.engine.flit.rank_looks`)."""
    nf, nh = fronts.size, hold_front.size
    live = np.empty(max(nf, 1), np.int64)
    scr = new_scratch(max(nf, 1), max(nh, 1))
    live_fronts(nf, nh, closed.size, fronts, waits, hold_front, hold_buffer, closed, scr, live)
    return live[:nf] == 0


def _dead_spread(comm: Any, fronts: np.ndarray, waits: np.ndarray, hold_front: np.ndarray,
                 hold_buffer: np.ndarray, closed: np.ndarray, front_owner: Owner,
                 buffer_owner: Owner) -> np.ndarray:  # fmt: skip
    """:func:`dead_fronts` over several ranks: liveness spread by messages, round by round."""
    me, size = comm.Get_rank(), comm.Get_size()
    i64 = np.int64
    w = waits >= 0
    # every edge to the rank that can use it: waits to the buffer's owner (who learns
    # which fronts a live buffer frees), holds to the front's owner, closed to the buffer's
    we = _ship(comm, np.stack([waits[w], fronts[w]], 1), buffer_owner(waits[w]))
    he = _ship(comm, np.stack([hold_front, hold_buffer], 1), front_owner(hold_front))
    cl = np.unique(_ship(comm, closed[:, None], buffer_owner(closed))[:, 0])
    forder = np.argsort(fronts, kind="stable")
    fsorted = fronts[forder]
    bufs = np.unique(we[:, 0])  # the buffers of this rank some front waits for
    # per buffer: the fronts waiting for it; per front: the buffers it holds
    w_ptr, w_id = _csr(we[:, 0], we[:, 1], bufs)
    w_loc = _local(w_id, fsorted)
    w_own = front_owner(w_id).astype(i64) if size > 1 else np.zeros(w_id.size, i64)
    known = _local(he[:, 0], fsorted) >= 0
    h_ptr, h_id = _csr(he[known, 0], he[known, 1], fsorted)
    h_own = buffer_owner(h_id).astype(i64) if size > 1 else np.zeros(h_id.size, i64)
    h_loc = np.where(h_own == me, _local(h_id, bufs), -1)
    f_live = ~(waits[forder] >= 0)
    b_live = _local(bufs, cl) < 0
    # a holder no rank lists can move: its buffers are live
    stray = he[~known, 1]
    fstack = np.empty(fsorted.size + 1, i64)
    bstack = np.empty(bufs.size + 1, i64)
    start_f = np.flatnonzero(f_live)
    start_b = np.flatnonzero(b_live)
    rows = np.stack([np.full(stray.size, _BUFFER, i64), stray], 1)
    dst = buffer_owner(stray).astype(i64) if size > 1 else np.zeros(stray.size, i64)
    while True:
        if rows.shape[0]:  # messages for this rank: mark and spread
            own = dst == me
            mine, rows, dst = rows[own], rows[~own], dst[~own]
            f = _local(mine[mine[:, 0] == _FRONT, 1], fsorted)
            b = _local(mine[mine[:, 0] == _BUFFER, 1], bufs)
            f, b = f[f >= 0], b[b >= 0]
            f, b = f[~f_live[f]], b[~b_live[b]]
            f_live[f], b_live[b] = True, True
            start_f = np.concatenate([start_f, np.unique(f)])
            start_b = np.concatenate([start_b, np.unique(b)])
        fstack[: start_f.size], bstack[: start_b.size] = start_f, start_b
        cap = w_id.size + h_id.size + 1
        kind, ids, to = np.empty(cap, i64), np.empty(cap, i64), np.empty(cap, i64)
        n = _spread(f_live, b_live, fstack, start_f.size, bstack, start_b.size, w_ptr, w_loc,
                    w_id, w_own, h_ptr, h_loc, h_id, h_own, me, kind, ids, to, 0)  # fmt: skip
        out = np.concatenate([rows, np.stack([kind[:n], ids[:n]], 1)])
        out_dst = np.concatenate([dst, to[:n]])
        if size == 1 or comm.allreduce(int(out.shape[0]), op=sum_op()) == 0:
            break
        rows = exchange_rows(comm, out, out_dst)
        dst = np.full(rows.shape[0], me, i64)
        start_f = start_b = np.empty(0, i64)
    dead = np.zeros(fronts.size, bool)
    dead[forder] = ~f_live
    return dead


def _agree(comm: Any, mine: Any) -> Any:
    """The least value any rank offers (None offers nothing); None if no rank does."""
    got = [v for v in comm.allgather(mine) if v is not None]
    return min(got) if got else None


def walk_cycle(
    comm: Any,
    fronts: np.ndarray,
    waits: np.ndarray,
    dead: np.ndarray,
    hold_front: np.ndarray,
    hold_buffer: np.ndarray,
    hold_prio: np.ndarray | None = None,
    max_walk: int = MAX_WALK,
) -> list[tuple[int, int]]:
    """One wait-for cycle of dead fronts as ``[(front, buffer it waits for), ...]``; collective.

    From the lowest dead front: front -> the buffer it waits for -> that
    buffer's first holder (lowest ``hold_prio`` row, e.g. (age, packet id), then
    lowest front id) -> ..., until a front repeats; the fronts from the repeated
    one on are the cycle. Every holder of a dead buffer is dead, so the walk
    stays among them. Two ``allgather`` calls per front visited (at most
    ``max_walk``). Empty when no front is dead.
    """
    comm = resolve(comm)
    i64 = np.int64
    fronts, waits = np.asarray(fronts, i64), np.asarray(waits, i64)
    dead = np.asarray(dead, bool)
    hf, hb = np.asarray(hold_front, i64), np.asarray(hold_buffer, i64)
    prio = np.zeros((hf.size, 0), i64) if hold_prio is None else np.asarray(hold_prio, i64)
    if prio.ndim == 1:  # one key per edge
        prio = prio[:, None]
    order = np.lexsort((hf, *prio.T[::-1], hb))
    hf, hb, prio = hf[order], hb[order], prio[order]
    mine = dict(zip(fronts[dead].tolist(), waits[dead].tolist(), strict=True))
    f = _agree(comm, min(mine) if mine else None)
    seen: dict[int, int] = {}
    path: list[tuple[int, int]] = []
    while f is not None and f not in seen and len(path) < max_walk:
        seen[f] = len(path)
        b = _agree(comm, mine.get(f))
        if b is None:
            break
        path.append((f, b))
        i = int(np.searchsorted(hb, b))
        here = None
        if i < hb.size and hb[i] == b:
            here = (*prio[i].tolist(), int(hf[i]))
        nxt = _agree(comm, here)
        f = None if nxt is None else nxt[-1]
    if f is None or f not in seen:
        return path
    return path[seen[f] :]
