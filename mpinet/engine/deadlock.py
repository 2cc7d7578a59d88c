"""One wait-for cycle of a deadlocked run, named by node labels and ports.

In a deadlock every queue that holds packets is blocked: the oldest head of a
link needs a slot in the input buffer the link feeds (of the next class, with
``buffer_classes = "hops"``), and that buffer is full. Each full buffer's
packets sit in queues of the node behind it, which are blocked in turn, so
following "link -> the buffer its head needs -> the link holding that
buffer's oldest packet" from any blocked link must come back to a link it has
seen: the cycle.

The walk is distributed: the rank owning a link names the buffer, the rank
owning the buffer's node names the next link, one ``allreduce`` each. Cycles
are short in practice; the walk stops after :data:`MAX_WALK` links.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.comm import max_op

MAX_WALK = 10_000


def _first_blocked_link(eng: Any) -> int:
    """The lowest global link id holding packets on this rank, or -1."""
    st = eng.st
    act = st.act[: int(st.na[0])]
    act = act[st.lcount[act] > 0]
    return int(act.min()) + eng.lo * eng.deg if act.size else -1


def _head_need(eng: Any, glink: int) -> tuple[int, int]:
    """(slot of the oldest head, global buffer id it needs) of a local link."""
    st, p, deg = eng.st, eng.pool, eng.deg
    link = glink - eng.lo * deg
    best = -1
    for c in range(st.ncls):
        s = int(st.qhead[link * st.ncls + c])
        if s >= 0 and (
            best < 0 or (p.key[s], p.pid[s]) < (p.key[best], p.pid[best])
        ):  # the oldest head
            best = s
    cls = int(p.hops[best]) + 1 if st.use_cls else 0
    return best, glink * st.ncls + cls


def _buffer_holders(eng: Any) -> tuple[np.ndarray, np.ndarray]:
    """Sorted buffer ids occupied on this rank and the link holding each one's oldest packet."""
    p = eng.pool
    live = p.live()
    b = p.up[live]
    on = b >= 0
    live, b = live[on], b[on]
    order = np.lexsort((p.pid[live], p.key[live], b))
    live, b = live[order], b[order]
    first = np.ones(b.size, dtype=bool)
    first[1:] = b[1:] != b[:-1]
    live, b = live[first], b[first]
    links = (p.cur[live].astype(np.int64)) * eng.deg + p.port[live]
    return b, links


def _arrow(c: dict) -> str:
    cls = "" if c["class"] is None else f" class {c['class']}"
    return f"{c['node']} -[{c['port']}{cls}]->"


def _agree(comm: Any, value: int) -> int:
    """The one rank's value that is not -1 (every other rank passes -1)."""
    return int(comm.allreduce(int(value), op=max_op()))


def wait_for_cycle(eng: Any, t: int, in_flight: int) -> dict:
    """A report of the deadlock of engine ``eng`` at step ``t`` (the same on every rank)."""
    comm, deg, ncls, topo = eng.comm, eng.deg, eng.st.ncls, eng.topo
    lo_link, hi_link = eng.lo * deg, eng.hi * deg
    starts = comm.allgather(_first_blocked_link(eng))
    link = min(s for s in starts if s >= 0)
    bufs, holders = _buffer_holders(eng)
    seen: dict[int, int] = {}
    path: list[dict] = []
    while link not in seen and len(path) < MAX_WALK:
        seen[link] = len(path)
        need = -1
        if lo_link <= link < hi_link:
            _, need = _head_need(eng, link)
        need = _agree(comm, need)
        nxt = -1
        i = int(np.searchsorted(bufs, need))
        if i < bufs.size and bufs[i] == need:
            nxt = int(holders[i])
        nxt = _agree(comm, nxt)
        node, port = divmod(link, deg)
        path.append(
            {
                "node": topo.label(node),
                "port": topo.ports[port],
                "next": topo.label(int(topo.neighbors(np.array([node]))[0, port])),
                "class": need % ncls if ncls > 1 else None,
            }
        )
        if nxt < 0:  # should not happen in a real deadlock; report the path so far
            break
        link = nxt
    cycle = path[seen[link] :] if link in seen else path
    hops = " ".join(_arrow(c) for c in cycle)
    message = (
        f"deadlock in step {t}: {in_flight:,} packets in flight and none can move; "
        f"wait-for cycle of {len(cycle)} full buffers: {hops} {cycle[0]['node'] if cycle else ''}"
    )
    return {
        "step": int(t),
        "blocked_packets": int(in_flight),
        "cycle": cycle,
        "message": message,
    }
