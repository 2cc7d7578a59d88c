"""A plain-Python reference of the flit engine of docs/switching.md (issue 23).

The executable specification the compiled flit engine is held to, flit for
flit: one object per packet, one FIFO per buffer (source queue or virtual
channel), one dict of credits, no MPI, no numba. Small networks only; clarity
over speed. Where the page leaves a choice open, the choice is written here
(Q1-Q13) and is the one that gives the page's closed forms.

Inputs: packets as (pid, src, dst, injection step); the router is called one
packet at a time, as ``tests/reference_engine.py`` calls it (``HopContext``
step = t + 1, hops = the head's hops so far). Routers that hold (WAIT) or drop
packets, and faults, are out of scope. Buffers are keyed ``("src", node,
port)`` and ``("vc", u, port, v)`` (VC v of link (u, port), at node
``nb[u][port]``); ``record=True`` keeps per step ``links`` {(u, port): flits},
``vcs`` {VC key: flits} and ``where`` {pid: ((buffer or ("dst",), flits), ...)}.

Q1  "holds (l, v) ... until the step its tail is sent into it": inclusive. The
    VC is free for allocation from the next step on (allocation sees the holds
    of the start of the step plus those taken earlier in the same step).
Q2  Step 2 (allocation) before step 3 (arbitration) would let two packets take
    one free VC in one step. Allocation is therefore done per output link in
    arbitration order, each packet at its turn; a packet that would get a VC but
    no capacity sends nothing and holds nothing (a hold starts with the head).
Q3  Credits at the start of step t are B minus the flits in the VC at the start
    of t (a flit that left in t - 1 is credited for t). Only the holder or a
    packet allocating a VC not held sends into it, so one packet per VC per step.
Q4  Store-and-forward "requests only once all L of its flits are there (its tail
    arrived by step t - 1)": read as the tail arrived; flits already sent on from
    the VC do not count against it.
Q5  The closed forms say B >= 2 for wormhole. With capacity c a VC passes at most
    B flits per 2 steps (a slot is credited the step after its flit left), so the
    forms hold for B >= 2c, or B >= L (the worm fits in one VC); B = 1 gives one
    flit per 2 steps on every hop with a VC: H + 2(L - 1) for H >= 2, whatever c.
Q6  `admit`: the page's results section says "the step before its head left the
    source" (admit = inject when the head left at i + 1); the traces section says
    "the head's first step out of the source". The first is used (-1 while the
    head has not left), so latency = queueing + network time holds.
Q7  A packet with source = destination is delivered in its injection step with
    0 hops and admit = inject, as in the packet engine (the page is silent).
Q8  Deadlock ("no injection to come"): in step t some packet is undelivered at
    the start of the step, no flit moves, and no packet has injection step >= t.
    (Then the state of step t + 1 equals that of step t.)
Q9  The wait-for cycle starts at the lowest (node, port, VC) holding flits and
    follows the page's rule; (node, port) names the link by its sender, the VC
    lies at the receiver. In a real deadlock every VC the walk reaches holds
    flits (a held empty VC would let its holder move), which the walk asserts.
Q10 sdc counts requests that could move alone at the start of the step (a buffer
    front: either it holds its VC with a credit, goes to its destination, or an
    allowed VC is free with enough credits); k-port ranks a node's links by the
    (injection step, id) of their oldest such request.
Q11 Counters per step t >= 1: flits that crossed a link (the hop into the
    destination included), packets delivered (those of source = destination at
    their injection included), flits not yet consumed at the end of step t
    (source queues and the packets injected at t included), and packets not yet
    delivered (today's in-flight counter).
Q12 A route passing a node twice can make one packet the front of two buffers
    asking for one link; arbitration then serves the station nearer the head
    first (key: injection, id, -station). A route that needs a VC index >= V
    under `hops` or `negative-hop` raises ValueError (the engine refuses it up
    front).
Q13 The issue asks for deadlocks to be found while traffic is still injected;
    the page (followed here) waits for the last injection (Q8).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from mpinet.routing.base import HopContext

SWITCHING = ("store-and-forward", "cut-through", "wormhole")
POLICIES = ("any", "hops", "negative-hop")


@dataclass
class Station:
    """Where some of a packet's flits are: its source queue or one VC."""

    buf: tuple  # ("src", node, port) or ("vc", u, port, v): the link (u, port) feeds it
    node: int  # the node the buffer is at
    port: int = -1  # the packet's output port there (decided when the head arrived)
    n: int = 0  # flits here now


@dataclass
class Pkt:
    pid: int
    src: int
    dst: int
    inj: int
    hdr: list
    stations: list = field(default_factory=list)  # in path order; the last holds the head
    hops: int = 0  # the head's hops
    negs: int = 0  # negative hops among them (negative-hop)
    consumed: int = 0
    admit: int = -1
    deliver: int = -1


@dataclass
class SwitchRecord:
    """What :func:`simulate_switching` returns."""

    steps: int
    packets: np.ndarray  # (P, 7): pid, src, dst, inject, deliver, hops, admit; by pid
    hops: np.ndarray  # (H, 6): step, pid, from, to, port, VC (-1 into the destination)
    load: np.ndarray  # (N, degree): flits that crossed each link
    counters: np.ndarray  # (steps, 4): flits moved, packets delivered, flits / packets in flight
    deadlock_step: int | None = None
    cycle: list = field(default_factory=list)  # [(node, port, VC), ...] on a deadlock
    trace: list = field(default_factory=list)  # with record=True: one dict per step


def packets_from_workload(workload, topo) -> list[tuple[int, int, int, int]]:
    """(pid, src, dst, inject) of every packet of a unicast ``workload``."""
    out = []
    for t in range(workload.last_injection_step + 1):
        ids, srcs, dsts = workload.injections(0, topo.num_nodes, t)
        out += [(int(i), int(s), int(d), t) for i, s, d in zip(ids, srcs, dsts, strict=True)]
    return out


def simulate_switching(topo, router, packets, *, switching="wormhole", flits=1, vcs=1,
                       vc_buffer=None, vc_policy="any", model=None, kind="all-port", k=1,
                       capacity=None, colour=None, seed=0, max_steps=10_000,
                       record=False):  # fmt: skip
    """Run ``packets`` (pid, src, dst, inject) under docs/switching.md; a :class:`SwitchRecord`.

    ``model`` (an mpinet Model) gives the port model and ``port_capacities``;
    else ``kind`` ("all-port", "one-port", "k-port", "sdc"), ``k`` and
    ``capacity`` (None = 1, an int, or one value per port). ``colour`` (node ->
    int) is needed by ``negative-hop``. ``record`` keeps, per step, the flits
    per link, the VC occupancy and every packet's flits per buffer.
    """
    L, V = int(flits), int(vcs)
    B = int(vc_buffer if vc_buffer is not None else (4 if switching == "wormhole" else L))
    if switching not in SWITCHING or vc_policy not in POLICIES:
        raise ValueError(f"switching {switching!r} / vc_policy {vc_policy!r} unknown")
    if min(L, V, B) < 1 or (switching != "wormhole" and B < L):
        raise ValueError(f"flits, vcs, vc_buffer must be >= 1 and B >= L here: {L}, {V}, {B}")
    if vc_policy == "negative-hop" and colour is None:
        raise ValueError("negative-hop needs a node colouring")
    if router.holds or len({r[0] for r in packets}) != len(packets):
        raise ValueError("holding routers are out of scope; packet ids must be distinct")
    if model is not None:
        kind, k, caps = model.kind, model.k, [int(c) for c in model.port_capacities(topo)]
    elif capacity is None or np.isscalar(capacity):
        caps = [int(capacity or 1)] * topo.degree
    else:
        caps = [int(c) for c in capacity]
    k = 1 if kind == "one-port" else int(k)
    nb = topo.neighbors(np.arange(topo.num_nodes)).tolist()
    need = 1 if switching == "wormhole" else L  # credits to take a VC
    saf = switching == "store-and-forward"

    pk: dict[int, Pkt] = {}
    fifo = defaultdict(list)  # buffer key -> [(pid, station index)], heads' entry order
    credit = defaultdict(lambda: B)  # VC key -> credits the sender knows
    holder: dict[tuple, int] = {}  # VC key -> pid holding it
    load = np.zeros((topo.num_nodes, topo.degree), dtype=np.int64)
    hop_rows, counters, trace = [], [], []
    by_step = defaultdict(list)
    for pid, s, d, i in sorted(packets, key=lambda r: (r[3], r[0])):
        by_step[int(i)].append((int(pid), int(s), int(d)))
    last = max(by_step, default=0)

    def route(p: Pkt, st: Station, t: int) -> None:
        """Decide the head's output port at ``st.node`` (step t + 1, as the packet engine)."""
        ctx = HopContext(step=t + 1, pids=np.array([p.pid]), hops=np.array([p.hops]), seed=seed)
        hdr = np.array([p.hdr], dtype=np.int64).reshape(1, router.header_width)
        ports, new = router.next_port(np.array([st.node]), np.array([p.dst]), hdr, ctx)
        st.port, p.hdr = int(ports[0]), [int(x) for x in new[0]]
        assert 0 <= st.port < topo.degree and nb[st.node][st.port] >= 0, "bad port"

    def allowed(p: Pkt, u: int, port: int) -> list[int]:
        """The VCs the policy allows for the head's hop over link (u, port)."""
        if vc_policy == "any":
            return list(range(V))
        # negative-hop: the negative hops so far, this one included
        v = p.hops if vc_policy == "hops" else p.negs + (colour(u) > colour(nb[u][port]))
        if v >= V:
            raise ValueError(f"packet {p.pid} needs VC {v} under {vc_policy}; vcs = {V}")
        return [v]

    def free_vc(p: Pkt, u: int, port: int) -> int | None:
        """The lowest allowed VC not held with >= ``need`` credits, or None."""
        for v in allowed(p, u, port):
            key = ("vc", u, port, v)
            if key not in holder and credit[key] >= need:
                return v
        return None

    def requests() -> list[tuple]:
        """(inj, pid, -j, packet, j) of every front with flits that may request (step 1)."""
        out = []
        for q in fifo.values():
            if not q:
                continue
            pid, j = q[0]
            p = pk[pid]
            if p.stations[j].n == 0:
                continue
            if saf and j > 0 and any(s.n for s in p.stations[:j]):
                continue  # store-and-forward: the tail is not here yet
            out.append((p.inj, p.pid, -j, p, j))
        return sorted(out, key=lambda r: r[:3])

    def target(p: Pkt, j: int):
        """(next node, VC key held or None, into destination) for station j's link."""
        st = p.stations[j]
        nxt = nb[st.node][st.port]
        held = p.stations[j + 1].buf if j + 1 < len(p.stations) else None
        return nxt, held, nxt == p.dst

    def can_move(p: Pkt, j: int) -> bool:
        nxt, held, home = target(p, j)
        if home:
            return True
        if held is not None:
            return credit[held] >= 1
        return free_vc(p, p.stations[j].node, p.stations[j].port) is not None

    def links_to_serve(reqs) -> set:
        links = {(p.stations[j].node, p.stations[j].port) for *_, p, j in reqs}
        if kind == "all-port":
            return links
        mov = [(r[0], r[1], (r[3].stations[r[4]].node, r[3].stations[r[4]].port))
               for r in reqs if can_move(r[3], r[4])]  # fmt: skip
        if kind == "sdc":
            count = [0] * topo.degree
            for *_, (_, port) in mov:
                count[port] += 1
            if max(count) == 0:
                return set()
            dim = count.index(max(count))  # the lowest index on ties
            return {lk for lk in links if lk[1] == dim}
        oldest = {}  # link -> (inj, pid) of its oldest movable request
        for i, pid, lk in mov:
            oldest[lk] = min(oldest.get(lk, (i, pid)), (i, pid))
        chosen = set()
        for u in {lk[0] for lk in oldest}:
            mine = sorted((key, lk) for lk, key in oldest.items() if lk[0] == u)
            chosen |= {lk for _, lk in mine[:k]}
        return chosen

    def inject(t: int) -> int:
        home = 0
        for pid, s, d in by_step.get(t, []):
            hdr = router.init_headers(np.array([s]), np.array([d]))
            p = Pkt(pid, s, d, t, [int(x) for x in np.asarray(hdr).reshape(-1)])
            pk[pid] = p
            if s == d:
                p.deliver, p.admit, home = t, t, home + 1  # Q7
                continue
            st = Station(("src", s, -1), s, n=L)
            route(p, st, t)
            st.buf = ("src", s, st.port)
            p.stations.append(st)
            fifo[st.buf].append((pid, 0))
        return home

    def snapshot(moved: dict) -> dict:
        """Flits per link this step, per VC and per packet and buffer at its end."""
        occ, where = defaultdict(int), {}
        for p in pk.values():
            places = [(s.buf, s.n) for s in p.stations if s.n] + [(("dst",), p.consumed)]
            where[p.pid] = tuple(x for x in places if x[1])
            for s in p.stations:
                if s.buf[0] == "vc" and s.n:
                    occ[s.buf] += s.n
        return {"links": dict(moved), "vcs": dict(occ), "where": where}

    live = lambda: [p for p in pk.values() if p.deliver < 0]  # noqa: E731
    inject(0)
    t, deadlock, cycle = 0, None, []
    while (live() or t < last) and t < max_steps:
        t += 1
        for key, c in credit.items():  # Q3: credits are the free slots
            assert c == B - sum(pk[pid].stations[j].n for pid, j in fifo[key]) >= 0
        reqs = requests()
        serve = links_to_serve(reqs)
        cap = {lk: caps[lk[1]] for lk in serve}
        moves, released = [], []  # (packet, station, flits, VC key or None)
        for _, _, _, p, j in reqs:  # step 3: per link, oldest first
            st = p.stations[j]
            lk = (st.node, st.port)
            if cap.get(lk, 0) == 0:
                continue
            nxt, vc, home = target(p, j)
            if not home and vc is None:  # step 2: the head asks for a VC
                v = free_vc(p, st.node, st.port)
                if v is None:
                    continue  # sends nothing; does not block the others
                vc = ("vc", st.node, st.port, v)
            n = min(st.n, cap[lk]) if home else min(st.n, cap[lk], credit[vc])
            if n == 0:
                continue
            cap[lk] -= n
            tail = n == st.n and not any(s.n for s in p.stations[:j])
            if not home:
                credit[vc] -= n
                holder[vc] = p.pid
                if tail:
                    released.append(vc)  # Q1: free from step t + 1
            moves.append((p, j, n, vc, tail))
        # end of step t: flits arrive, credits return, heads are routed
        returned, arrived, moved, ndel = [], [], defaultdict(int), 0
        for p, j, n, _, tail in moves:  # departures first: arrivals count from t + 1
            st = p.stations[j]
            st.n -= n
            if st.buf[0] == "vc":
                returned.append((st.buf, n))
            if tail:
                assert fifo[st.buf][0] == (p.pid, j)
                fifo[st.buf].pop(0)
            if j == 0 and p.admit < 0:
                p.admit = t - 1  # Q6
        for p, j, n, vc, _ in moves:
            u, port = p.stations[j].node, p.stations[j].port
            nxt = nb[u][port]
            load[u, port] += n
            moved[(u, port)] += n
            if j + 1 == len(p.stations) and (vc is not None or p.consumed == 0):  # the head
                hop_rows.append((t, p.pid, u, nxt, port, -1 if vc is None else vc[3]))
                p.hops += 1
                p.negs += bool(colour is not None and colour(u) > colour(nxt))
                if vc is not None:
                    p.stations.append(Station(vc, nxt))
                    fifo[vc].append((p.pid, j + 1))
                    arrived.append(p)
            if vc is None:  # into the destination, consumed
                p.consumed += n
                if p.consumed == L:
                    p.deliver, ndel = t, ndel + 1
            else:
                p.stations[j + 1].n += n
        for vc in released:
            del holder[vc]
        for key, n in returned:
            credit[key] += n
        for p in arrived:
            route(p, p.stations[-1], t)
        ndel += inject(t)
        flying = live()
        counters.append(
            (sum(moved.values()), ndel, sum(L - p.consumed for p in flying), len(flying))
        )
        if record:
            trace.append(snapshot(moved))
        if live() and not moves and t > last:  # Q8
            deadlock, cycle = t, wait_for_cycle(pk, fifo, nb, allowed)
            break
    rows = [(p.pid, p.src, p.dst, p.inj, p.deliver, p.hops, p.admit) for p in pk.values()]
    return SwitchRecord(
        steps=t,
        packets=np.array(sorted(rows), dtype=np.int64).reshape(-1, 7),
        hops=np.array(sorted(hop_rows, key=lambda r: (r[1], r[0])), np.int64).reshape(-1, 6),
        load=load,
        counters=np.array(counters, dtype=np.int64).reshape(-1, 4),
        deadlock_step=deadlock,
        cycle=cycle,
        trace=trace,
    )


def wait_for_cycle(pk, fifo, nb, allowed) -> list[tuple[int, int, int]]:
    """One wait-for cycle of (node, port, VC) of a deadlocked state (Q9)."""

    def flits(key):
        return sum(pk[pid].stations[j].n for pid, j in fifo.get(key, []))

    full = sorted(key for key in fifo if key[0] == "vc" and flits(key))
    y, seen, path = full[0], {}, []
    while y not in seen:
        seen[y] = len(path)
        path.append(y)
        pid, j = fifo[y][0]
        p = pk[pid]
        st = p.stations[j]
        assert st.n > 0 and nb[st.node][st.port] != p.dst, "not a deadlock"
        if j + 1 < len(p.stations):
            y = p.stations[j + 1].buf  # waits for the VC it holds (no credit)
        else:  # waits for the lowest VC its policy allows
            y = ("vc", st.node, st.port, allowed(p, st.node, st.port)[0])
        assert flits(y), "the walk reached an empty VC"
    return [key[1:] for key in path[seen[y] :]]
