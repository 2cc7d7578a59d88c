"""One-port broadcast baselines of paper 001 Table 2 (n-cube, n-star, CCC).

* :class:`HypercubeBroadcast`: dimension order; in step ``d + 1`` every
  informed node sends on dimension ``d``: ``n`` steps, optimal (``log2 N``).
* :class:`GreedyOnePortBroadcast` (used for the n-star): in every step the
  informed nodes are matched greedily with uninformed neighbours (informed
  nodes with the fewest uninformed neighbours choose first, each takes the
  neighbour with the fewest informed neighbours). Paper 001 quotes 12, 16,
  20 steps for n = 5, 6, 7 from its ref. [12] (Mendia and Sarkar).
* :class:`CCCBroadcast`: the ``ceil(5n/2) - 1`` algorithm of ref. [16]
  (Liestman and Peters) as paper 001 section 6 describes it: ``2n - 1``
  alternating steps (lateral on ring position ``i0 + k``, then local ``+``
  from it) inform a node of every ring, then local steps only fill the
  rings, every informed node sending towards an uninformed ring neighbour.

All are schedules computed from the topology and the source (every node can
compute them), replayed by :class:`~mpinet.workloads.scc_broadcast.ScheduledBroadcast`;
transmissions to nodes that already hold the message are not made.
"""

from __future__ import annotations

import numpy as np

from mpinet.errors import TopologyError
from mpinet.routing.tables import distances_from, neighbor_table
from mpinet.topology.base import Topology
from mpinet.workloads.checks import Check, log2_bound
from mpinet.workloads.scc_broadcast import ScheduledBroadcast, relay


def _finish(log: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(np.concatenate(c) for c in zip(*log, strict=True))


def hypercube_schedule(topo: Topology, source: int) -> tuple[np.ndarray, ...]:
    """Dimension-order one-port broadcast on ``hypercube:N`` (N steps)."""
    if topo.family != "hypercube":
        raise TopologyError(f"hypercube broadcast needs hypercube:N, got {topo.spec}")
    nb = neighbor_table(topo).astype(np.int64)
    reverse = np.asarray(topo.reverse_port, dtype=np.int64)
    when = np.full(topo.num_nodes, -1, dtype=np.int64)
    arrival = when.copy()
    when[source] = 0
    log: list = []
    for d in range(topo.n):
        v = np.flatnonzero(when >= 0)
        relay(nb, when, arrival, reverse, d + 1, v, np.full(v.size, d), log)
    return _finish(log)


def greedy_schedule(topo: Topology, source: int) -> tuple[np.ndarray, ...]:
    """Greedy one-port broadcast on any topology (see the module docstring)."""
    nb = neighbor_table(topo).astype(np.int64)
    reverse = topo.reverse_ports(np.arange(topo.num_nodes))
    exists = nb >= 0
    safe = np.maximum(nb, 0)
    when = np.full(topo.num_nodes, -1, dtype=np.int64)
    arrival = when.copy()
    when[source] = 0
    log: list = []
    step = 0
    while (when < 0).any():
        step += 1
        informed = when >= 0
        unin = exists & ~informed[safe]  # (node, port): port leads to an uninformed node
        ninf = (exists & informed[safe]).sum(axis=1)  # informed neighbours of each node
        senders = np.flatnonzero(informed & unin.any(axis=1))
        senders = senders[np.argsort(unin[senders].sum(axis=1), kind="stable")]
        taken = np.zeros(topo.num_nodes, dtype=bool)
        out_v, out_p = [], []
        for v in senders.tolist():
            ports = np.flatnonzero(unin[v] & ~taken[safe[v]])
            if ports.size:
                p = int(ports[np.argmin(ninf[nb[v, ports]])])
                taken[nb[v, p]] = True
                out_v.append(v)
                out_p.append(p)
        relay(nb, when, arrival, reverse, step, np.array(out_v), np.array(out_p), log)
    return _finish(log)


def ccc_schedule(topo: Topology, source: int) -> tuple[np.ndarray, ...]:
    """The ``ceil(5n/2) - 1`` one-port broadcast on ``ccc:N`` (module docstring)."""
    if topo.family != "ccc":
        raise TopologyError(f"CCC broadcast needs ccc:N, got {topo.spec}")
    n = topo.n
    nb = neighbor_table(topo).astype(np.int64)
    reverse = np.asarray(topo.reverse_port, dtype=np.int64)
    pos = np.arange(topo.num_nodes) % n
    when = np.full(topo.num_nodes, -1, dtype=np.int64)
    arrival = when.copy()
    when[source] = 0
    i0 = source % n
    log: list = []
    step = 0
    for k in range(n):  # alternating: lateral on position i0 + k, then local + from it
        at = np.flatnonzero((when >= 0) & (pos == (i0 + k) % n))
        step += 1
        relay(nb, when, arrival, reverse, step, at, np.full(at.size, 2), log)
        if k < n - 1:
            at = np.flatnonzero((when >= 0) & (pos == (i0 + k) % n))
            step += 1
            relay(nb, when, arrival, reverse, step, at, np.zeros(at.size, np.int64), log)
    while (when < 0).any():  # local steps only: towards an uninformed ring neighbour, + first
        step += 1
        informed = when >= 0
        v = np.flatnonzero(informed)
        plus = ~informed[nb[v, 0]]
        minus = ~informed[nb[v, 1]] & ~plus
        senders = np.concatenate([v[plus], v[minus]])
        ports = np.concatenate([np.zeros(plus.sum(), np.int64), np.ones(minus.sum(), np.int64)])
        if not relay(nb, when, arrival, reverse, step, senders, ports, log):  # pragma: no cover
            raise RuntimeError("CCC broadcast stalled")
    return _finish(log)


class _Baseline(ScheduledBroadcast):
    schedule = staticmethod(greedy_schedule)

    def __init__(self, topo: Topology, source: int, messages: int = 1) -> None:
        source = int(topo.check_ids([source], "source")[0])
        sched = self.schedule(topo, source)
        steps = int(sched[0].max()) if sched[0].size else 1
        super().__init__(topo, source, *sched, messages=messages, interval=steps)


class HypercubeBroadcast(_Baseline):
    """One-port dimension-order broadcast on ``hypercube:N`` (N steps).

    Parameters
    ----------
    topo : Hypercube
        The n-cube.
    source : int
        The source node id.
    messages : int
        Messages, sent one after the other (no pipelining).
    """

    name = "hypercube one-port broadcast"
    schedule = staticmethod(hypercube_schedule)


class GreedyOnePortBroadcast(_Baseline):
    """One-port greedy-matching broadcast on any topology (the n-star baseline).

    Parameters
    ----------
    topo : Topology
        The network.
    source : int
        The source node id.
    messages : int
        Messages, sent one after the other (no pipelining).
    """

    name = "greedy one-port broadcast"
    schedule = staticmethod(greedy_schedule)


class CCCBroadcast(_Baseline):
    """One-port ``ceil(5n/2) - 1`` broadcast on ``ccc:N`` (paper 001 ref. [16]).

    Parameters
    ----------
    topo : CCC
        ``ccc:N``.
    source : int
        The source node id.
    messages : int
        Messages, sent one after the other (no pipelining).
    """

    name = "ccc one-port broadcast"
    schedule = staticmethod(ccc_schedule)


#: one-port star broadcast steps paper 001 Table 2 quotes from its ref. [12]
STAR_TABLE2 = {5: 12, 6: 16, 7: 20}


def ccc_steps(n: int) -> int:
    """``ceil(5n/2) - 1`` (paper 001 section 6, ref. [16])."""
    return (5 * n + 1) // 2 - 1


def _ecc(topo: Topology) -> int:
    return int(distances_from(topo, topo.identity).max())


def _checks():
    def bound(t: Topology) -> int:
        return max(_ecc(t), log2_bound(t))

    out = []
    for n in (5, 7, 8, 9):
        out.append(
            Check(
                f"hypercube:{n}",
                "dimension-order one-port broadcast",
                "one-port",
                lambda t: HypercubeBroadcast(t, t.identity),
                bound,
                paper_steps=lambda t: t.n,
                paper_source="paper 001 Table 2",
                quick=n <= 7,
            )
        )
    for n in (4, 5, 6, 7):
        out.append(
            Check(
                f"star:{n}",
                "greedy one-port broadcast",
                "one-port",
                lambda t: GreedyOnePortBroadcast(t, t.identity),
                bound,
                paper_steps=(lambda t: STAR_TABLE2[t.n]) if n in STAR_TABLE2 else None,
                paper_source="paper 001 Table 2 (ref. [12])" if n in STAR_TABLE2 else "",
                quick=n <= 6,
            )
        )
    for n in (3, 4, 5, 6, 7, 8):
        out.append(
            Check(
                f"ccc:{n}",
                "ceil(5n/2)-1 one-port broadcast",
                "one-port",
                lambda t: CCCBroadcast(t, t.identity),
                bound,
                paper_steps=lambda t: ccc_steps(t.n),
                paper_source="paper 001 sec. 6 / Table 2 (ref. [16])",
                quick=n <= 6,
            )
        )
    return out


CHECKS = _checks()
