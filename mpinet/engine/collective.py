"""Collectives as node programs: each step every node decides what it sends.

Unlike unicast traffic (packets that *move* under a router), a collective
*copies*: a node that holds message ``b`` may send a copy on any of its ports,
and keeps it. A :class:`NodeProgram` decides, for all nodes of a rank at once,
from the node ids, the step number and what each node holds, the
transmissions ``(node, port, message)`` of the step. The engine checks them
(the node holds the message, the link exists, the communication model holds:
capacity per link, ports per node, one dimension under SDC), delivers the
copies (one ``Alltoallv`` for those crossing ranks), counts duplicates, and
stops when a step sends nothing (unless a program's optional ``busy()`` says
some node still has something queued); the steps reported are those up to the last
one in which a node received a message it did not hold. Every node must end up holding every
message it should; the report says so, with the steps measured, never
computed.

With faults (a :class:`~mpinet.topology.faults.FaultSet`, active from its
step) a copy sent over a failed link is *lost*: the node program does not
know about faults, so the transmission happens (it counts, and the model
holds) but nothing arrives. A failed node has no live link, so it neither
receives nor passes anything on. Failed nodes are not expected to hold
anything; the result counts the lost copies and names the surviving nodes
the collective could not reach (:attr:`CollectiveResult.faults`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from mpinet.engine.comm import max_op, resolve, sum_op
from mpinet.engine.exchange import exchange_rows
from mpinet.engine.models import Model, violations
from mpinet.engine.partition import block_bounds
from mpinet.engine.run import CollectiveError
from mpinet.topology.base import Topology


@dataclass
class Holdings:
    """What the nodes of one rank hold: ``when[v - lo, b]`` is the step node ``v``
    received message ``b`` (0 = it started with it, -1 = not yet), ``port`` the
    port it arrived on (-1 for the start)."""

    lo: int
    hi: int
    when: np.ndarray
    port: np.ndarray

    def holds(self, nodes: np.ndarray, msgs: np.ndarray) -> np.ndarray:
        return self.when[nodes - self.lo, msgs] >= 0

    def received_at(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, messages) first received in ``step`` (global node ids)."""
        v, b = np.nonzero(self.when == step)
        return v + self.lo, b


class NodeProgram(Protocol):
    """A collective's per-node rule (see the module docstring)."""

    name: str
    messages: int

    def start(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, messages) held before step 1 by nodes in [lo, hi)."""

    def transmissions(self, step: int, held: Holdings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(nodes, ports, messages) sent in ``step`` by this rank's nodes."""

    def wanted(self, lo: int, hi: int) -> np.ndarray:
        """(hi - lo, messages) bool: what each node must hold at the end."""


@dataclass
class CollectiveResult:
    """Global outcome of a collective run (identical on every rank)."""

    steps: int  # the last step in which some node received something new
    transmissions: int
    duplicates: int
    complete: bool
    missing: int
    per_step: np.ndarray  # (steps, 3): transmissions, newly informed (node, message), duplicates
    class_steps: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    #: with faults: copies lost, surviving nodes not reached (count, first labels)
    faults: dict | None = None
    #: with ``record_hops``: this rank's transmissions, rows (step, message, from, to, port)
    hops: np.ndarray | None = None

    def as_dict(self) -> dict:
        out = {
            "steps": self.steps,
            "transmissions": self.transmissions,
            "duplicates": self.duplicates,
            "complete": self.complete,
            "missing": self.missing,
            "class_steps": self.class_steps,
            "seconds": round(self.seconds, 4),
        }
        if self.faults is not None:
            out["faults"] = self.faults
        return out


def run_collective(
    topo: Topology,
    program: NodeProgram,
    model: Model,
    comm: Any = None,
    *,
    max_steps: int = 1_000_000,
    faults: Any = None,
    record_hops: bool = False,
    progress: Callable[[int, int, int, int], None] | None = None,
) -> CollectiveResult:
    """Run ``program`` on ``topo`` under ``model`` over the ranks of ``comm``.

    ``faults``: a FaultSet; copies sent over its failed links are lost (module docstring).
    ``record_hops``: keep one row ``(step, message, from_node, to_node, port)`` per
    transmission of this rank's nodes, lost ones included (:attr:`CollectiveResult.hops`).
    ``progress``: called on rank 0 after every step as ``progress(step, transmissions,
    informed, to_inform)``: totals so far, and the (node, message) pairs not held at the start.
    """
    t0 = time.perf_counter()
    comm = resolve(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    bounds = block_bounds(topo.num_nodes, size)
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    deg = topo.degree
    caps = model.port_capacities(topo)
    table = topo.neighbors(np.arange(lo, hi))
    nmsg = int(program.messages)
    when = np.full((hi - lo, nmsg), -1, dtype=np.int32)
    port = np.full((hi - lo, nmsg), -1, dtype=np.int8)
    v0, b0 = program.start(lo, hi)
    when[np.asarray(v0) - lo, np.asarray(b0)] = 0
    to_inform = topo.num_nodes * nmsg - comm.allreduce(int(np.size(v0)), op=sum_op())
    hop_rows: list[np.ndarray] = []
    sent = informed = 0
    held = Holdings(lo, hi, when, port)
    per_step = []
    cls_names = list(dict.fromkeys(topo.port_classes))
    cls_of = np.array([cls_names.index(c) for c in topo.port_classes])
    cls_used = np.zeros(len(cls_names), dtype=np.int64)
    t = 0
    last_new = 0
    lost_total = 0
    while t < max_steps:
        t += 1
        nodes, ports, msgs = (np.asarray(a, dtype=np.int64) for a in program.transmissions(t, held))
        msg = _check(topo, program, model, caps, table, held, t, nodes, ports, msgs)
        if msg is not None:
            nodes = ports = msgs = nodes[:0]
        local = nodes - lo
        target = table[local, ports] if nodes.size else nodes
        back = topo.reverse_of(nodes, ports) if nodes.size else nodes
        rows = np.stack([target, msgs, back], axis=1)
        if record_hops and nodes.size:
            hop_rows.append(np.stack([np.full_like(nodes, t), msgs, nodes, target, ports], 1))
        if faults is not None and t >= faults.step and nodes.size:
            lost = faults.link_down(nodes, ports)  # sent, never received
            lost_total += int(lost.sum())
            rows, target = rows[~lost], target[~lost]
        owner = np.searchsorted(bounds, target, side="right") - 1
        recv = exchange_rows(comm, rows, owner) if size > 1 else rows
        tv, tb, tp = recv[:, 0] - lo, recv[:, 1], recv[:, 2]
        fresh = when[tv, tb] < 0
        # several copies of one message may arrive at once: count one as new
        key = tv[fresh] * nmsg + tb[fresh]
        first = np.unique(key, return_index=True)[1]
        new_v, new_b = tv[fresh][first], tb[fresh][first]
        when[new_v, new_b] = t
        port[new_v, new_b] = tp[fresh][first]
        # classes used, still busy, -min port, max port
        flags = np.zeros(len(cls_names) + 3, dtype=np.int64)
        flags[-3] = bool(getattr(program, "busy", lambda: False)())
        flags[-2:] = (-deg, -1)
        if nodes.size:
            flags[np.unique(cls_of[ports])] = 1
            flags[-2:] = (-ports.min(), ports.max())
        local_counts = np.array(
            [nodes.size, new_v.size, recv.shape[0] - new_v.size, msg is not None], dtype=np.int64
        )
        glob = np.empty_like(local_counts)
        comm.Allreduce(local_counts, glob, op=sum_op())
        gflags = np.empty_like(flags)
        comm.Allreduce(flags, gflags, op=max_op())
        if not glob[3] and model.kind == "sdc" and glob[0] and -gflags[-2] != gflags[-1]:
            msg = f"model sdc violated in step {t}: dimensions {-gflags[-2]} and {gflags[-1]} used"
            glob[3] = 1
        if glob[3]:
            msgs_all = [m for m in comm.allgather(msg) if m]
            raise CollectiveError(msgs_all[0] if msgs_all else msg)
        if glob[0] == 0 and not gflags[-3]:
            t -= 1
            break
        cls_used += gflags[: len(cls_names)]
        if glob[1]:
            last_new = t
        per_step.append(glob[:3].copy())
        sent, informed = sent + int(glob[0]), informed + int(glob[1])
        if progress is not None and rank == 0:
            progress(t, sent, informed, to_inform)
    want = program.wanted(lo, hi)
    report = None
    if faults is not None:
        # failed nodes are not expected to hold anything, nor anyone a message that
        # started at failed nodes only (it could not leave them)
        down = faults.node_down(np.arange(lo, hi))
        alive_src = ((when == 0) & ~down[:, None]).any(axis=0).astype(np.int64)
        started = np.empty_like(alive_src)
        comm.Allreduce(alive_src, started, op=max_op())
        want = want & ~down[:, None] & (started > 0)[None, :]
        report = _unreached(topo, comm, lo, (when < 0) & want, lost_total)
        report["messages_from_failed_nodes"] = int(nmsg - started.sum())
    missing = int(((when < 0) & want).sum())
    missing = comm.allreduce(missing, op=sum_op())
    per = np.array(per_step, dtype=np.int64).reshape(-1, 3)
    return CollectiveResult(
        steps=last_new,
        transmissions=int(per[:, 0].sum()),
        duplicates=int(per[:, 2].sum()),
        complete=missing == 0,
        missing=missing,
        per_step=per,
        class_steps={c: int(n) for c, n in zip(cls_names, cls_used, strict=True)},
        seconds=time.perf_counter() - t0,
        faults=report,
        hops=np.concatenate(hop_rows) if hop_rows else np.empty((0, 5), np.int64),
    )


def _unreached(topo: Topology, comm: Any, lo: int, short: np.ndarray, lost: int) -> dict:
    """Lost copies, and the surviving nodes missing a message they should hold (all ranks)."""
    nodes = np.flatnonzero(short.any(axis=1)) + lo
    first = np.concatenate(comm.allgather(nodes[:10]))[:10]
    return {
        "lost": comm.allreduce(lost, op=sum_op()),
        "unreached": comm.allreduce(int(nodes.size), op=sum_op()),
        "unreached_nodes": topo.labels(np.sort(first)),
    }


def _check(topo, program, model, caps, table, held, t, nodes, ports, msgs) -> str | None:
    """First problem with this rank's transmissions of step ``t``, or None."""
    if nodes.size == 0:
        return None
    deg = topo.degree
    if ports.min() < 0 or ports.max() >= deg:
        return f"step {t}: {program.name} used a port outside 0..{deg - 1}"
    local = nodes - held.lo
    if local.min() < 0 or local.max() >= held.hi - held.lo:
        return f"step {t}: {program.name} sent from a node this rank does not own"
    if not held.holds(nodes, msgs).all():
        i = int(np.flatnonzero(~held.holds(nodes, msgs))[0])
        return (
            f"step {t}: {program.name} sent message {int(msgs[i])} from node "
            f"{topo.label(int(nodes[i]))}, which does not hold it"
        )
    if (table[local, ports] < 0).any():
        i = int(np.flatnonzero(table[local, ports] < 0)[0])
        return (
            f"step {t}: {program.name} sent from node {topo.label(int(nodes[i]))} on port "
            f"{topo.ports[int(ports[i])]}, which has no link there"
        )
    sdc = int(ports[0]) if model.kind == "sdc" else None
    bad = violations(model, t, local, ports, deg, caps, sdc)
    if bad:
        node, p, why = bad[0]
        return (
            f"model {model.name} violated in step {t} at node {topo.label(node + held.lo)}, "
            f"port {topo.ports[p]}: {why}"
        )
    return None
