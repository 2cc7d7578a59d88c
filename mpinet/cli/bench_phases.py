"""``mpinet bench --phases``: a step's time split into compute, exchange and waiting.

The engine is timed from the outside: its communicator is wrapped in :class:`TimedComm`,
which notes when each communication call was entered and left on this rank and the bytes it
sent, so the engines carry no timers of their own and a run that is not a benchmark pays
nothing. After the run the ranks' notes meet on rank 0. Every call is a collective, made in
the same order by every rank, so call k was left by no rank before the last rank entered it:
a rank's waiting in call k is ``last entry - its entry`` (the slower ranks' compute), its
exchange ``its exit - last entry`` (the transfer itself), and its compute the rest of its
engine time. A call a rank may leave before the last rank enters it (a broadcast's root, an
eager send) waits only until it left. The ranks share one clock (``time.perf_counter``,
CLOCK_MONOTONIC, one host); on several hosts the split would need synchronised clocks.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

#: the communicator's calls that move data or synchronise (timed); the rest pass through
CALLS = frozenset((
    "Allreduce", "Alltoall", "Alltoallv", "Allgather", "Allgatherv", "Barrier", "Bcast",
    "Gather", "Reduce", "allreduce", "allgather", "alltoall", "bcast", "gather", "reduce",
    "barrier", "Sendrecv", "sendrecv", "Neighbor_alltoall", "Neighbor_alltoallv",
    "Neighbor_allgather", "Neighbor_allgatherv",
))  # fmt: skip


def _sent_bytes(args: tuple) -> int:
    """Bytes of a buffer call's send buffer (``[buf, (counts, displs)]`` or an array)."""
    if not args:
        return 0
    spec = args[0]
    if isinstance(spec, (list, tuple)) and spec and isinstance(spec[0], np.ndarray):
        buf = spec[0]
        if len(spec) > 1 and isinstance(spec[1], (list, tuple)):
            return int(np.sum(spec[1][0])) * buf.itemsize
        return buf.nbytes
    return spec.nbytes if isinstance(spec, np.ndarray) else 0


class TimedComm:
    """A communicator that notes the entry and exit time and sent bytes of every call."""

    def __init__(self, comm: Any) -> None:
        object.__setattr__(self, "_comm", comm)
        object.__setattr__(self, "notes", [])  # (entered, left, bytes, name)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._comm, name)
        if name not in CALLS or not callable(attr):
            return attr
        notes = self.notes

        def timed(*args: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            out = attr(*args, **kw)
            notes.append((t0, time.perf_counter(), _sent_bytes(args), name))
            return out

        return timed

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._comm, name, value)  # e.g. the watchdog's ``where``


def split(enter: np.ndarray, leave: np.ndarray, seconds: np.ndarray) -> dict:
    """Each rank's compute, exchange and waiting seconds from its calls' times.

    ``enter``, ``leave``: (ranks, calls) entry and exit times of the same calls on every
    rank; ``seconds``: each rank's engine time. Returns arrays per rank.
    """
    last = enter.max(axis=0) if enter.size else enter
    # a rooted or eager call (bcast's root, a gather's leaves) may leave before the last rank
    # enters: its waiting ends when it left, or the rest would be counted twice
    wait = np.clip(np.minimum(last, leave) - enter, 0, None).sum(axis=1)
    exch = np.clip(leave - np.maximum(enter, last), 0, None).sum(axis=1)
    compute = np.clip(seconds - wait - exch, 0, None)
    return {"compute": compute, "exchange": exch, "wait": wait}


def run_phases(p: Any, comm: Any) -> dict:
    """Run plan ``p``'s engine once under a :class:`TimedComm`; the split on rank 0.

    ``comm`` None: one process without MPI.
    """
    from mpinet.engine.comm import resolve
    from mpinet.jobs.switching import make_engine

    comm = resolve(comm)
    timed = TimedComm(comm)
    job = p.job
    engine = make_engine(p, timed, seed=job.seed, max_steps=job.max_steps,
                         order=job.model["order"], queues=job.model["queues"],
                         record_hops=False, progress=None, faults=p.faults)  # fmt: skip
    comm.Barrier()
    rec = engine.run(p.workload.traffic)
    notes = timed.notes
    # the flit engine's compiled exchange on several ranks calls MPI from compiled code: its
    # seconds waiting for messages and bytes sent, counted there (engine/flit/rank_loop.py)
    native = getattr(engine, "native_exchange", (0.0, 0))
    mine = {
        "enter": np.array([n[0] for n in notes]),
        "leave": np.array([n[1] for n in notes]),
        "bytes": int(sum(n[2] for n in notes)) + native[1],
        "seconds": rec.seconds,
        "native": native[0],
    }
    every = comm.gather(mine, root=0)
    c = np.asarray(rec.counters)
    out = {
        "steps": int(rec.steps),
        "hops": int(c[:, 0].sum()),
        "cross": int(c[:, 3].sum()),
        "delivered": int(c[:, 1].sum()),
        "engine_seconds": float(comm.allreduce(rec.seconds, op=_max())),
    }
    if comm.Get_rank() != 0:
        return out
    calls = {e["enter"].size for e in every}
    seconds = np.array([e["seconds"] for e in every])
    if len(calls) == 1:  # the same collective calls on every rank
        ph = split(np.stack([e["enter"] for e in every]),
                   np.stack([e["leave"] for e in every]), seconds)  # fmt: skip
    else:  # unmatched calls: their time is exchange and waiting together
        comm_s = np.array([float((e["leave"] - e["enter"]).sum()) for e in every])
        ph = {"compute": seconds - comm_s, "exchange": comm_s, "wait": np.full_like(comm_s, np.nan)}
    native = np.array([e["native"] for e in every])  # waiting and transfer, not split
    ph["wait"] = ph["wait"] + native
    ph["compute"] = np.clip(ph["compute"] - native, 0, None)
    out.update({k: [float(x) for x in v] for k, v in ph.items()})
    out["calls"] = max(calls)
    out["sent_bytes"] = [e["bytes"] for e in every]
    return out


def _max() -> Any:
    from mpinet.engine.comm import max_op

    return max_op()
