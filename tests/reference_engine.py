"""A plain-Python, per-packet reference of the engine's semantics.

This is the executable specification the compiled kernels of
:mod:`mpinet.engine` are tested against (``tests/test_buffers.py``): one dict
per packet, one list per output queue (served by ``(key, packet id)``), a
dict of credits, no MPI. Small networks only; clarity over speed. The router
is called vectorized on the packets that reach a node in a step, as the
engine calls it. Schedule (``holds``) routers are out of scope.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from mpinet.engine.deadlock import CHECK_EVERY, PACE
from mpinet.routing.base import HopContext


@dataclass
class RefRecord:
    """What :func:`simulate_reference` returns (global, rows sorted by packet id)."""

    steps: int
    packets: np.ndarray  # (P, 7): id, source, dest, inject, deliver, hops, admit step
    hops: np.ndarray  # (H, 5): step, packet, from, to, port; sorted by (packet, step)
    counters: np.ndarray  # (steps, 3): transmissions, delivered, in_flight
    deadlock_step: int | None = None
    occupancy: dict = field(default_factory=dict)  # (node, port, class) -> packets at the end
    #: the deadlock's wait-for cycle [(node, port, class of the buffer waited for or None)],
    #: the last step a packet crossed one of its links, the packets that can never move
    deadlock_cycle: list = field(default_factory=list)
    deadlock_closed: int | None = None
    dead_packets: int | None = None
    dead_ids: list = field(default_factory=list)  # the ids of those packets, sorted


def dead_fronts(queues, live, model, fronts):
    """The fronts (queues) of ``fronts`` that can never move: docs/architecture.md, "Deadlock".

    Start from ``fronts`` (blocked queues: their head is not delivered by its next hop and
    waits for a buffer without credit) and drop, until nothing changes, every front whose
    buffer is not full of packets that all sit in queues still in the set.
    """
    use_cls = model.classes == "hops"
    where = {}  # packet id -> the queue it sits in
    for key, q in queues.items():
        for p in q:
            where[p["pid"]] = key
    by_buf = defaultdict(list)
    for p in live.values():
        if isinstance(p["buf"], tuple):
            by_buf[p["buf"]].append(p)
    dead = set(fronts)
    while True:
        keep = set()
        for v, port, c in dead:
            need = (v, port, c + 1 if use_cls else 0)
            held = by_buf.get(need, [])
            if len(held) == model.buffer and all(where.get(p["pid"]) in dead for p in held):
                keep.add((v, port, c))
        if keep == dead:
            return dead, by_buf
        dead = keep


def simulate_reference(topo, router, model, workload, *, seed=0, order="fifo", max_steps=10**5,
                       check_every=CHECK_EVERY):  # fmt: skip
    """Run ``workload`` under the documented semantics; returns a :class:`RefRecord`.

    Parameters
    ----------
    topo, router, model : as for :class:`mpinet.engine.core.Engine`
    workload : a unicast workload (``injections(lo, hi, step)``)
    seed, order, max_steps : as for the engine
    check_every : steps between two deadlock checks (the engine's ``CHECK_EVERY``)
    """
    n = topo.num_nodes
    nb = topo.neighbors(np.arange(n))
    caps = model.port_capacities(topo)
    B, fifo = model.buffer, order == "fifo"
    finite, use_cls = B > 0, model.classes == "hops"
    ncls = model.max_hops + 1 if use_cls else 1
    queues = defaultdict(list)  # (node, port, class) -> queued packets (any order)
    credit = defaultdict(lambda: B)  # (node, port, class) -> free slots of the buffer it feeds
    inj_free = [B] * n  # free injection-buffer slots per node
    source = defaultdict(list)  # node -> packets waiting for an injection slot
    live, done, hop_rows, counters = {}, {}, [], []

    def by_age(p):
        return (p["key"], p["pid"])

    def route(pkts, t):
        """Decide each packet's output link once, at step ``t``, and queue it there."""
        if not pkts:
            return
        col = {c: np.array([p[c] for p in pkts], dtype=np.int64) for c in ("cur", "dst", "pid")}
        hdr = np.array([p["hdr"] for p in pkts], np.int64).reshape(len(pkts), router.header_width)
        hops = np.array([p["hops"] for p in pkts], dtype=np.int64)
        ctx = HopContext(step=t + 1, pids=col["pid"], hops=hops, seed=seed)
        ports, new = router.next_port(col["cur"], col["dst"], hdr, ctx)
        for p, port, h in zip(pkts, ports, new, strict=True):
            p["port"], p["hdr"] = int(port), [int(x) for x in h]
            nxt = int(nb[p["cur"], p["port"]])
            assert nxt >= 0, f"router used a missing link at {p['cur']}"
            if use_cls and p["hops"] + 1 > model.max_hops and nxt != p["dst"]:
                raise ValueError(f"packet {p['pid']} needs a class above max_hops")
            queues[(p["cur"], p["port"], p["hops"] if use_cls else 0)].append(p)

    def movable(p, v, port):
        nxt = int(nb[v, port])
        if not finite or nxt == p["dst"]:
            return True
        return credit[(v, port, p["hops"] + 1 if use_cls else 0)] > 0

    def best_head(v, port):
        """The oldest movable head among the class queues of link (v, port), or None."""
        heads = [min(q, key=by_age) for c in range(ncls) if (q := queues.get((v, port, c)))]
        return min((h for h in heads if movable(h, v, port)), key=by_age, default=None)

    def links_to_serve(active):
        if model.kind == "all-port":
            return active
        if model.kind == "sdc":
            demand = np.zeros(topo.degree, dtype=np.int64)  # queued packets per port
            for (_, port, _), q in queues.items():
                demand[port] += len(q)
            if not finite:
                dim = int(np.argmax(demand))
            else:
                ok = sorted({port for v, port in active if best_head(v, port) is not None})
                if not ok:
                    return []
                dim = max(ok, key=lambda port: demand[port])  # ties: the lowest port
            return [link for link in active if link[1] == dim]
        chosen = []  # one-port / k-port: per node, the k links with the oldest movable heads
        for v in sorted({v for v, _ in active}):
            heads = [(by_age(h), (v, port)) for w, port in active
                     if w == v and (h := best_head(v, port)) is not None]  # fmt: skip
            chosen += [link for _, link in sorted(heads)[: model.k]]
        return chosen

    def deliver(p, t):
        done[p["pid"]] = (p["pid"], p["src"], p["dst"], p["inj"], t, p["hops"], p["adm"])
        live.pop(p["pid"], None)

    def inject(t):
        """Packets injected at ``t``: home ones delivered, the others routed or source-queued."""
        ids, srcs, dsts = (np.asarray(a, np.int64) for a in workload.injections(0, n, t))
        hdrs = router.init_headers(srcs, dsts).reshape(ids.size, router.header_width)
        home, now = 0, []
        for pid, s, d, h in zip(ids.tolist(), srcs.tolist(), dsts.tolist(), hdrs, strict=True):
            p = {"pid": pid, "src": s, "dst": d, "cur": s, "inj": t, "hops": 0, "key": t,
                 "adm": -1 if finite and s != d else t, "hdr": [int(x) for x in h],
                 "buf": "inj" if finite else None}  # fmt: skip
            if s == d:
                deliver(p, t)
                home += 1
                continue
            live[pid] = p
            (source[s] if finite else now).append(p)
        route(now, t)
        return home

    def admit(t):
        """End of step ``t``: source-queued packets take free injection slots, FIFO."""
        got = []
        for v in sorted(source):
            q = sorted(source[v], key=lambda p: (p["inj"], p["pid"]))
            take, source[v] = q[: inj_free[v]], q[inj_free[v] :]
            inj_free[v] -= len(take)
            for p in take:
                p["key"], p["adm"] = (t if fifo else p["inj"]), t
            got += take
        route(got, t)
        return len(got)

    inject(0)
    if finite:
        admit(0)
    t, last, deadlock = 0, workload.last_injection_step, None
    deg = topo.degree
    moved = defaultdict(int)  # (node, port) -> the last step a packet crossed it
    budget = 0  # the steps' moves and active links since the last search, less PACE x its work
    cycle, closed, dead_ids = [], None, []

    def qid(key):  # the engine's global queue id: the walk's order
        return (key[0] * deg + key[1]) * ncls + key[2]

    def blocked(since):
        """Queues whose head waits for a buffer without credit, on links unmoved after ``since``."""
        out = set()
        for (v, port, c), q in queues.items():
            if q and moved[(v, port)] <= since:
                h = min(q, key=by_age)
                if int(nb[v, port]) != h["dst"] and not movable(h, v, port):
                    out.add((v, port, c))
        return out

    def search(fronts):
        """Dead fronts among ``fronts``: (cycle, closed, ids of the packets in them)."""
        nonlocal budget
        dead, by_buf = dead_fronts(queues, live, model, fronts)
        budget -= PACE * sum(len(queues[k]) for k in fronts)
        if not dead:
            return None
        f, seen, path = min(dead, key=qid), {}, []
        while f not in seen:
            seen[f] = len(path)
            need = (f[0], f[1], f[2] + 1 if use_cls else 0)
            path.append((f[0], f[1], need[2] if use_cls else None))
            oldest = min(by_buf[need], key=by_age)
            f = next(k for k in dead if any(p is oldest for p in queues[k]))
        ring = path[seen[f] :]
        ids = sorted(p["pid"] for k in dead for p in queues[k])
        return ring, max(moved[(v, port)] for v, port, _ in ring), ids

    while (live or t < last) and t < max_steps:
        t += 1
        active = sorted({(v, port) for (v, port, _), q in queues.items() if q})
        serve = links_to_serve(active)  # decided on the state at the start of step t
        moves, ndel, returned, arrived = 0, 0, [], []
        for v, port in serve:
            nxt = int(nb[v, port])
            for _ in range(int(caps[port])):
                p = best_head(v, port)
                if p is None:
                    break
                queues[(v, port, p["hops"] if use_cls else 0)].remove(p)
                moved[(v, port)] = t
                hop_rows.append((t, p["pid"], v, nxt, port))
                moves += 1
                if p["buf"] == "inj":
                    inj_free[v] += 1  # free again for this step's admission
                elif p["buf"] is not None:
                    returned.append(p["buf"])  # credited back for step t + 1
                p["hops"] += 1
                p["cur"] = nxt
                if nxt == p["dst"]:
                    deliver(p, t)
                    ndel += 1
                    continue
                p["buf"] = None
                if finite:
                    p["buf"] = (v, port, p["hops"] if use_cls else 0)
                    credit[p["buf"]] -= 1
                    assert credit[p["buf"]] >= 0
                if fifo:
                    p["key"] = t
                arrived.append(p)
        for b in returned:
            credit[b] += 1
        route(arrived, t)
        ndel += inject(t)
        admitted = admit(t) if finite else 0
        counters.append((moves, ndel, len(live)))
        if not finite:
            continue
        # the engine's rule: a step after the last injection in which nothing moved (every
        # blocked front counts), else every check_every steps (not with hop classes, paced
        # by the work of the searches) the fronts whose link sent nothing in those steps
        due = t % check_every == 0 and budget >= 0 and not use_cls
        stale = blocked(t - check_every) if due else set()
        budget = min(0, budget + moves + len({(v, port) for (v, port, _), q in queues.items()
                                              if q}))  # fmt: skip
        if not live:
            continue
        if not moves and not admitted and t >= last:
            found = search(blocked(1 << 62))
        elif stale:
            found = search(stale)
        else:
            found = None
        if found is not None:
            deadlock, (cycle, closed, dead_ids) = t, found
            break
    rows = list(done.values()) + [
        (p["pid"], p["src"], p["dst"], p["inj"], -1, p["hops"], p["adm"]) for p in live.values()
    ]
    occupancy = defaultdict(int)
    for p in live.values():
        if isinstance(p["buf"], tuple):
            occupancy[p["buf"]] += 1
    hop_rows.sort(key=lambda r: (r[1], r[0]))
    return RefRecord(
        steps=t,
        packets=np.array(sorted(rows), dtype=np.int64).reshape(-1, 7),
        hops=np.array(hop_rows, dtype=np.int64).reshape(-1, 5),
        counters=np.array(counters, dtype=np.int64).reshape(-1, 3),
        deadlock_step=deadlock,
        occupancy=dict(occupancy),
        deadlock_cycle=cycle,
        deadlock_closed=closed,
        dead_packets=len(dead_ids) if deadlock is not None else None,
        dead_ids=dead_ids,
    )
