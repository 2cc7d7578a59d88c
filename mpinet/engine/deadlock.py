"""Deadlocks of the packet engine with finite buffers, found while traffic is still injected.

A *blocked front* is a queue (link, class) whose head is not delivered by its
next hop and waits for the buffer the link feeds (of class hops + 1 under
``buffer_classes = "hops"``), which has no credit. A packet of buffer ``b``
sitting in the queue of front ``q`` means that ``b`` frees a slot only when
``q`` moves; a buffer whose ``B`` packets all sit in blocked queues is
*closed*. That is the wait-for description of :mod:`mpinet.engine.waitfor`,
whose dead fronts can never move again, whatever is injected later: a
deadlock. The report names one wait-for cycle among them: front -> the buffer
its head needs -> the queue holding that buffer's oldest packet -> ...

When the engine looks (:class:`Watch`):

* every :data:`CHECK_EVERY` = K steps (``t % K == 0``), among the blocked fronts
  whose link sent nothing in the last K steps. A deadlock formed in step ``d``
  (its links never move again) is found at the first check at or after
  ``d + K``: K to 2K - 1 steps later, while packets are still injected or not.
  Searches are paced by their work: one that walked W packets (its fronts'
  queues) lets the next run only once the steps since have moved packets and
  held active links PACE x W times (counted over all ranks), so in a network
  congested for a long time a search costs at most about a tenth of the steps
  (and the deadlock is found later, by the time that pays for a search);
* in a step after the last injection in which nothing moved, nothing was
  admitted and no held packet waits (every front is then blocked; all count).

With ``buffer_classes = "hops"`` there is no check: a front of class c waits
for class c + 1, so the waits cannot close a cycle (the second rule stays).
No check before a fault strikes (it drains queues).

The report's ``closed`` is the last step a packet crossed a link of the cycle:
since then every buffer of the cycle has been full and every head on it
waiting. Everything is a function of the global state, so the step, the cycle
and the counts are the same on any number of ranks (``tests/reference_engine.py``
implements the same rule apart).

Cost: per step, the last step each local link moved (4 bytes per link; the
filter and ``closed``) and one more number in the step's ``Allreduce``. Per
check, one pass over the active links (the stamp; a head's record only on
unmoved links whose next buffer has no credit) and a sort of those fronts;
only when some exist, a walk of their queues and the search (collective).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.comm import max_op, sum_op
from mpinet.engine.jit import jit
from mpinet.engine.waitfor import dead_fronts, walk_cycle

#: steps between two deadlock checks (a deadlock is found K to 2K - 1 steps after it forms)
CHECK_EVERY = 8
#: a search may run once the steps since the last one moved packets and served links PACE
#: times as many as the packets it walked (searches cost about a tenth of the steps at most)
PACE = 8


@jit
def _blocked_fronts(act, na, ncls, use_cls, qhead, nbt, rec, credit, moved, since, out_q, out_need):
    """Queues of the active links that sent nothing after step ``since`` and whose head
    waits for a buffer without credit."""
    n = 0
    for i in range(na):
        link = act[i]
        if moved[link] > since:
            continue
        for c in range(ncls):
            q = link * ncls + c
            s = qhead[q]
            if s < 0 or (use_cls and c + 1 >= ncls):  # empty, or its next hop delivers
                continue
            need = q + 1 if use_cls else q
            if credit[need] > 0 or nbt[link] == rec[s].dst:
                continue
            out_q[n], out_need[n] = q, need
            n += 1
    return n


@jit
def _queue_packets(qs, qhead, rec, out_i, out_b, out_key, out_pid, qlen):
    """Every packet in the queues ``qs``: (queue index, buffer, key, pid) of those in a
    link buffer, and each queue's length."""
    m = 0
    for i in range(qs.size):
        s = qhead[qs[i]]
        n = 0
        while s >= 0:
            n += 1
            if rec[s].up >= 0:
                out_i[m], out_b[m], out_key[m], out_pid[m] = i, rec[s].up, rec[s].key, rec[s].pid
                m += 1
            s = rec[s].nxt
        qlen[i] = n
    return m


def _arrow(c: dict) -> str:
    cls = "" if c["class"] is None else f" class {c['class']}"
    return f"{c['node']} -[{c['port']}{cls}]->"


class Watch:
    """The deadlock checks of one run of :class:`mpinet.engine.core.Engine` (finite buffers)."""

    def __init__(self, eng: Any) -> None:
        self.eng = eng
        self.moved = np.zeros(eng.st.lcount.size, dtype=np.int32)  # last step per local link
        self.stale = (np.empty(0, np.int64), np.empty(0, np.int64))
        # a fault drains queues when it strikes: nothing is final before. Hop classes
        # cannot deadlock (a front of class c waits for class c + 1): no checks
        self.after = 0 if eng.faults is None else int(eng.faults.step)
        self.never = bool(eng.st.use_cls)
        self.budget = 0  # work the steps did since the last search, less PACE x its work

    def due(self, t: int) -> bool:
        """Whether step ``t`` is a check (the same answer on every rank)."""
        return t % CHECK_EVERY == 0 and t >= self.after and self.budget >= 0 and not self.never

    def account(self, moves: int, active: int) -> None:
        """After each step: its global moves and active links pay for the searches."""
        self.budget = min(0, self.budget + moves + active)

    def _blocked(self, since: int) -> tuple[np.ndarray, np.ndarray]:
        """This rank's blocked fronts on links unmoved after step ``since`` (local queue
        ids, sorted) and the buffers they wait for."""
        st, p = self.eng.st, self.eng.pool
        na = int(st.na[0])
        q, need = np.empty(na * st.ncls, np.int64), np.empty(na * st.ncls, np.int64)
        n = _blocked_fronts(st.act, na, st.ncls, st.use_cls, st.qhead, st.nbt, p.rec,
                            st.credit, self.moved, since, q, need)  # fmt: skip
        o = np.argsort(q[:n], kind="stable")
        return q[:n][o], need[:n][o]

    def scan(self, t: int) -> int:
        """Check step ``t``, local part: the blocked fronts whose link sent nothing in the
        last :data:`CHECK_EVERY` steps (kept for :meth:`find`); returns how many."""
        self.stale = self._blocked(t - CHECK_EVERY)
        return int(self.stale[0].size)

    def find(self, t: int, in_flight: int, stall: bool = False) -> dict | None:
        """The deadlock report of step ``t``, or None; collective.

        ``stall``: nothing moved after the last injection (every blocked front
        counts); else the fronts :meth:`scan` kept.
        """
        q, need = self._blocked(1 << 62) if stall else self.stale
        return self._search(t, in_flight, q, need, stall)

    def _search(self, t: int, in_flight: int, q: np.ndarray, need: np.ndarray, stall: bool):
        eng, st, p = self.eng, self.eng.st, self.eng.pool
        comm, ncls, deg = eng.comm, st.ncls, eng.deg
        base = eng.lo * deg * ncls  # local queue / buffer ids -> global ones
        cap = int(st.lcount[q // ncls].sum())
        hi, hb, hk, hp = (np.empty(cap, np.int64) for _ in range(4))
        qlen = np.zeros(q.size, np.int64)
        m = _queue_packets(q, st.qhead, p.rec, hi, hb, hk, hp, qlen)
        hi, hb, hk, hp = hi[:m], hb[:m], hk[:m], hp[:m]
        ub, cnt = np.unique(hb, return_counts=True)  # a buffer's packets are all on this rank
        closed = ub[cnt == eng.model.buffer]
        fronts, waits, holder = q + base, need + base, q[hi] + base
        bounds, per_node = eng.bounds, deg * ncls

        def owner(ids: np.ndarray) -> np.ndarray:  # a buffer's id is its feeding link's
            return np.searchsorted(bounds, ids // per_node, side="right") - 1

        dead = dead_fronts(comm, fronts, waits, holder, hb, closed, owner, owner)
        tot = np.array([dead.any(), qlen.sum()], dtype=np.int64)
        glob = np.empty_like(tot)
        comm.Allreduce(tot, glob, op=sum_op())
        self.budget -= PACE * int(glob[1])  # the packets walked: pace the next search
        if not glob[0]:
            return None
        walk = walk_cycle(comm, fronts, waits, dead, holder, hb, np.stack([hk, hp], 1))
        lo_link, hi_link = eng.lo * deg, eng.hi * deg
        last = max((int(self.moved[f // ncls - lo_link]) for f, _ in walk
                    if lo_link <= f // ncls < hi_link), default=0)  # fmt: skip
        closed_at = int(comm.allreduce(last, op=max_op()))
        stuck = int(comm.allreduce(int(qlen[dead].sum()), op=sum_op()))
        return self._report(t, in_flight, walk, closed_at, stuck, stall)

    def _report(self, t: int, in_flight: int, walk: list, closed_at: int, stuck: int,
                stall: bool) -> dict:  # fmt: skip
        topo, ncls, deg = self.eng.topo, self.eng.st.ncls, self.eng.deg
        cycle = []
        for f, b in walk:
            node, port = divmod(f // ncls, deg)
            cycle.append({
                "node": topo.label(node),
                "port": topo.ports[port],
                "next": topo.label(int(topo.neighbors(np.array([node]))[0, port])),
                "class": b % ncls if ncls > 1 else None,
            })  # fmt: skip
        hops = " ".join(_arrow(c) for c in cycle)
        tail = f"wait-for cycle of {len(cycle)} full buffers: {hops} {cycle[0]['node']}"
        if stall:
            head = f"deadlock in step {t}: {in_flight:,} packets in flight and none can move"
        else:
            head = (
                f"deadlock in step {t}: a wait-for cycle closed in step {closed_at} and "
                f"{stuck:,} packets can never move ({in_flight:,} in flight)"
            )
        return {
            "step": int(t),
            "closed": closed_at,
            "found": "stall" if stall else "check",
            "blocked_packets": int(in_flight),
            "dead_packets": stuck,
            "cycle": cycle,
            "message": f"{head}; {tail}",
        }
