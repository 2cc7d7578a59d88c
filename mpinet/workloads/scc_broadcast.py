"""Broadcasting on the SCC with the cyclic sequence sigma_c (paper 001, section 5).

The algorithm runs in *phases* of ``L + 1`` steps: ``L`` local steps that
spread the message around every ring (supernode) that holds it, then one
lateral step in which every informed node sends on its lateral link, so that
a supernode informs all its quotient-star neighbours at once (the ``n - 1``
lateral links of a ring carry the ``n - 1`` digits of one period
``2 3 ... n`` of sigma_c in parallel). Inside a ring (Figure 3), a node
informed over its lateral link (or the source) starts the ring: one-port, it
sends on ``local+`` in the first local step of the phase and on ``local-`` in
the second; multiple-port, on both in the first. Every other node forwards
once, in the direction the message travelled, in the next step of the phase.

* one-port (:class:`SCCOnePortBroadcast`): ``L = floor(n/2)``, paper 001
  Theorem 4 (eq. 12) claims ``floor((n+2)/2) floor(3(n-1)/2)`` steps;
* multiple-port (:class:`SCCMultiPortBroadcast`): ``L = floor((n-1)/2)``,
  Theorem 5 (eq. 13) claims ``floor((n+1)/2) floor(3(n-1)/2)`` steps; a node
  uses its two local ports at once (model ``k-port:2``).

Nodes compare notes before relaying (section 5): a transmission to a node
that already holds the message, or that another node informs in the same
step, is not made, so every node receives each message exactly once. The
schedule is computed once from the topology and the source (every node can
compute it locally: it depends on nothing else); the engine checks the model
and measures the steps.

Measured (``mpinet verify``): the schedule, idle steps included, lasts
exactly eq. 12 / eq. 13 (and the pipelined formulas) for n = 4..7, B = 1..4,
with exactly ``floor(3(n-1)/2)`` lateral steps. For n >= 5 some local steps
of the last phases send nothing (every ring is already full); the engine ends
a run at a step without transmissions, so all nodes skip them, and the
measured counts are 1 (n = 5, 6) or 3 (n = 7) steps below the paper's.

Pipelining ``B`` messages: message ``b`` runs the same schedule ``b * I``
steps later. A node is busy for one message only inside one phase window, so
``I = L + 1`` (the paper's interval ``floor((n+2)/2)`` one-port,
``floor((n+1)/2)`` multiple-port) never puts two messages on a node in a step.
Multiple-port with ``I = 1`` needs the ``all-port`` model (a node may send
the lateral copy of one message and the local copies of the next at once).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet.engine.collective import Holdings
from mpinet.errors import TopologyError
from mpinet.routing.tables import distances_from, neighbor_table
from mpinet.topology.base import Topology
from mpinet.workloads.checks import Check, log2_bound

#: SCC ports (n >= 4): local+, local-, lateral.
_PLUS, _MINUS, _LAT = 0, 1, 2


class ScheduledBroadcast:
    """A NodeProgram replaying a precomputed one-message schedule, pipelined.

    Parameters
    ----------
    topo : Topology
        The network.
    source : int
        Node id that holds every message at the start.
    steps, nodes, ports : ndarray
        The schedule of message 0: node ``nodes[k]`` sends on ``ports[k]`` in
        step ``steps[k]`` (1-based).
    messages : int
        Number of messages ``B``; message ``b`` is sent ``b * interval`` steps
        after message 0. Steps in which no message is sent are skipped by all
        nodes (``idle_steps``; ``schedule_steps`` counts them).
    interval : int
        Initiation interval in steps.
    """

    name = "scheduled broadcast"

    def __init__(
        self,
        topo: Topology,
        source: int,
        steps: np.ndarray,
        nodes: np.ndarray,
        ports: np.ndarray,
        messages: int,
        interval: int,
    ) -> None:
        self.topo, self.source = topo, source
        if int(messages) < 1 or int(interval) < 1:
            raise ValueError(f"messages and interval must be >= 1, got {messages}, {interval}")
        self.messages, self.interval = int(messages), int(interval)
        steps = np.asarray(steps, np.int64)
        b = np.repeat(np.arange(self.messages, dtype=np.int64), steps.size)
        s = np.tile(steps, self.messages) + b * self.interval
        order = np.lexsort((np.tile(ports, self.messages), np.tile(nodes, self.messages), s))
        #: last step of the schedule with its idle steps (the paper's count)
        self.schedule_steps = int(s.max()) if s.size else 0
        # the engine ends a run at a step without transmissions: every node knows the
        # schedule, so all skip its idle steps (the counts measured are without them)
        used, packed = np.unique(s[order], return_inverse=True)
        self.idle_steps = self.schedule_steps - used.size
        self.steps = packed.astype(np.int64) + 1
        self.nodes = np.tile(np.asarray(nodes, np.int64), self.messages)[order]
        self.ports = np.tile(np.asarray(ports, np.int64), self.messages)[order]
        self.msgs = b[order]

    def start(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Every message at the source."""
        if lo <= self.source < hi:
            return np.full(self.messages, self.source), np.arange(self.messages)
        return np.empty(0, np.int64), np.empty(0, np.int64)

    def transmissions(self, step: int, held: Holdings):
        """The schedule entries of ``step`` sent by this rank's nodes."""
        i, j = np.searchsorted(self.steps, [step, step + 1])
        v, p, b = self.nodes[i:j], self.ports[i:j], self.msgs[i:j]
        mine = (v >= held.lo) & (v < held.hi)
        return v[mine], p[mine], b[mine]

    def wanted(self, lo: int, hi: int) -> np.ndarray:
        """Every node wants every message."""
        return np.ones((hi - lo, self.messages), dtype=bool)


def relay(
    nb: np.ndarray,
    when: np.ndarray,
    arrival: np.ndarray,
    reverse: np.ndarray,
    step: int,
    senders: np.ndarray,
    ports: np.ndarray,
    log: list,
) -> int:
    """Make the transmissions of one step of a schedule being built.

    Senders that compare notes with a node that already holds the message, or
    that a sender earlier in the arrays informs in the same step, do not send.

    Parameters
    ----------
    nb : (N, degree) ndarray
        Neighbour table (-1: no link).
    when, arrival : (N,) ndarray
        Step each node was informed (-1: not yet) and the port it arrived on at
        the receiver; updated in place.
    reverse : ndarray
        Reverse port of each port, or ``(N, degree)``: of each link (file networks).
    step : int
        The step being built.
    senders, ports : ndarray
        Candidate transmissions, in priority order.
    log : list
        ``(steps, senders, ports)`` of the transmissions made is appended.

    Returns
    -------
    int
        Number of nodes newly informed.
    """
    if senders.size == 0:
        return 0
    target = nb[senders, ports]
    ok = (target >= 0) & (when[np.maximum(target, 0)] < 0)
    senders, ports, target = senders[ok], ports[ok], target[ok]
    first = np.unique(target, return_index=True)[1]
    first.sort()
    senders, ports, target = senders[first], ports[first], target[first]
    when[target] = step
    arrival[target] = reverse[ports] if reverse.ndim == 1 else reverse[senders, ports]
    log.append((np.full(senders.size, step), senders, ports))
    return int(target.size)


def sigma_c_schedule(topo: Topology, source: int, multiport: bool) -> tuple[np.ndarray, ...]:
    """The sigma_c schedule of one message (see the module docstring).

    Returns
    -------
    steps, nodes, ports : ndarray
        Transmissions of message 0, in step order.
    """
    if topo.family != "scc" or topo.n < 4:
        raise TopologyError(f"sigma_c broadcast needs scc:N with N >= 4, got {topo.spec}")
    n = topo.n
    local = (n - 1) // 2 if multiport else n // 2
    period = local + 1
    nb = neighbor_table(topo).astype(np.int64)
    reverse = np.asarray(topo.reverse_port, dtype=np.int64)
    when = np.full(topo.num_nodes, -1, dtype=np.int64)
    arrival = np.full(topo.num_nodes, -1, dtype=np.int64)
    when[source] = 0
    log: list = []
    lateral_done = np.zeros(topo.num_nodes, dtype=bool)
    base = 0
    while (when < 0).any():
        init = np.flatnonzero((when == base) & ((arrival == _LAT) | (arrival < 0)))
        for j in range(1, local + 1):
            s = base + j
            if multiport:
                starts = (
                    (np.repeat(init, 2), np.tile([_PLUS, _MINUS], init.size)) if j == 1 else None
                )
            else:
                starts = (init, np.full(init.size, _PLUS if j == 1 else _MINUS)) if j <= 2 else None
            fw = np.flatnonzero((when == s - 1) & ((arrival == _PLUS) | (arrival == _MINUS)))
            fw = fw[when[fw] > base]
            senders, ports = fw, 1 - arrival[fw]  # keep the direction of travel
            if starts is not None:
                senders = np.concatenate([starts[0], senders])
                ports = np.concatenate([starts[1], ports])
            relay(nb, when, arrival, reverse, s, senders, ports, log)
        s = base + period
        lat = np.flatnonzero((when >= 0) & ~lateral_done)
        lateral_done[lat] = True
        relay(nb, when, arrival, reverse, s, lat, np.full(lat.size, _LAT), log)
        base = s
        if base > 4 * topo.num_nodes:  # pragma: no cover - a bug guard
            raise RuntimeError("sigma_c schedule does not terminate")
    steps, nodes, ports = (np.concatenate(c) for c in zip(*log, strict=True))
    return steps, nodes, ports


def d_star(n: int) -> int:
    """Diameter of the n-star, ``floor(3(n-1)/2)``."""
    return 3 * (n - 1) // 2


def one_port_steps(n: int, messages: int = 1) -> int:
    """Paper 001 eq. 12 (B = 1) and its pipelined form ``floor((n+2)/2) floor(B-1+3(n-1)/2)``."""
    return (n + 2) // 2 * ((2 * (messages - 1) + 3 * (n - 1)) // 2)


def multi_port_steps(n: int, messages: int = 1, interval: int | None = None) -> int:
    """Paper 001 eq. 13 and its pipelined forms (interval ``floor((n+1)/2)`` or 1)."""
    if interval == 1:
        return (n + 1) // 2 * d_star(n) + messages - 1
    return (n + 1) // 2 * ((2 * (messages - 1) + 3 * (n - 1)) // 2)


def lateral_time(n: int, lateral: int, local: int, multiport: bool) -> float:
    """Running time in lateral-link steps (Thm 6, eq. 15): local links
    ``floor(n/2)`` (one-port) or ``floor((n-1)/2)`` (multiple-port) times faster."""
    ratio = (n - 1) // 2 if multiport else n // 2
    return lateral + local / ratio


class _SigmaC(ScheduledBroadcast):
    """The sigma_c broadcast; subclasses choose one-port or multiple-port."""

    multiport = False

    def __init__(
        self, topo: Topology, source: int, messages: int = 1, interval: int | None = None
    ) -> None:
        source = int(topo.check_ids([source], "source")[0])
        sched = sigma_c_schedule(topo, source, multiport=self.multiport)
        default = (topo.n + (1 if self.multiport else 2)) // 2
        interval = default if interval is None else int(interval)
        super().__init__(topo, source, *sched, messages=messages, interval=interval)
        self.name = f"scc {'multiple' if self.multiport else 'one'}-port sigma_c broadcast"


class SCCOnePortBroadcast(_SigmaC):
    """One-port sigma_c broadcast of ``messages`` messages from ``source``.

    Parameters
    ----------
    topo : SCC
        ``scc:N``, N >= 4.
    source : int
        The source node id.
    messages : int
        Messages ``B`` (pipelined).
    interval : int, optional
        Initiation interval; default the paper's ``floor((n+2)/2)``.
    """


class SCCMultiPortBroadcast(_SigmaC):
    """Multiple-port sigma_c broadcast (both local links at once).

    Parameters as :class:`SCCOnePortBroadcast`; the default interval is the
    paper's ``floor((n+1)/2)`` (model ``k-port:2``); 1 needs ``all-port``.
    """

    multiport = True


def _ecc(topo: Topology) -> int:
    return int(distances_from(topo, topo.identity).max())


def _bound(ports: int, messages: int):
    """Exact lower bound: the last message leaves the source no earlier than step
    ``ceil(B / ports)`` and needs the eccentricity; one-port also ``ceil(log2 N)``."""

    def bound(topo: Topology) -> int:
        b = -(-messages // ports) + _ecc(topo) - 1
        return max(b, log2_bound(topo)) if ports == 1 else b

    return bound


def _thm6(multiport: bool):
    """Check report: Thm 6's running time in lateral-link steps from the measured class steps."""

    def report(topo: Topology, res: Any) -> dict:
        lat, loc = res.class_steps.get("lateral", 0), res.class_steps.get("local", 0)
        return {"lateral_time": round(lateral_time(topo.n, lat, loc, multiport), 4)}

    return report


def _checks():
    out = []
    cases = [(n, b, n <= 6 and b <= 2) for n in (4, 5, 6, 7) for b in (1, 2, 3, 4)]
    for n, b, quick in cases:
        if b > 2 and n < 7 and n != 5:
            continue
        out.append(
            Check(
                f"scc:{n}",
                f"sigma_c one-port broadcast B={b}",
                "one-port",
                lambda t, b=b: SCCOnePortBroadcast(t, t.identity, messages=b),
                _bound(1, b),
                paper_steps=lambda t, b=b: one_port_steps(t.n, b),
                paper_source="paper 001 Thm 4 eq. 12" + (" (pipelined, sec. 5.1)" if b > 1 else ""),
                quick=quick,
                report=_thm6(False) if b == 1 else None,
            )
        )
        out.append(
            Check(
                f"scc:{n}",
                f"sigma_c multiple-port broadcast B={b}",
                "k-port:2",
                lambda t, b=b: SCCMultiPortBroadcast(t, t.identity, messages=b),
                _bound(2, b),
                paper_steps=lambda t, b=b: multi_port_steps(t.n, b),
                paper_source="paper 001 Thm 5 eq. 13" + (" (pipelined, sec. 5.2)" if b > 1 else ""),
                quick=quick,
                report=_thm6(True) if b == 1 else None,
            )
        )
        if b > 1:
            out.append(
                Check(
                    f"scc:{n}",
                    f"sigma_c multiple-port broadcast B={b} interval 1",
                    "all-port",
                    lambda t, b=b: SCCMultiPortBroadcast(t, t.identity, messages=b, interval=1),
                    _bound(3, b),
                    paper_steps=lambda t, b=b: multi_port_steps(t.n, b, 1),
                    paper_source="paper 001 sec. 5.2 (interval 1)",
                    quick=quick,
                )
            )
    return out


CHECKS = _checks()
