"""MPI access and a serial stand-in communicator.

``comm`` is always a parameter in mpinet. ``comm=None`` means a single
process without MPI (:class:`SerialComm`), so the pure layers and serial tests
never need an MPI library; :func:`mpinet.engine.world.world` starts MPI (the commands
import that module when they run). No numpy here (the block partition is in
:mod:`mpinet.engine.partition`): a command that runs no engine (``verify --list``) skips it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from array import array
from typing import Any

from mpinet.engine import pmi


class SerialComm:
    """The subset of the mpi4py communicator API mpinet uses, for one process."""

    def Get_rank(self) -> int:  # noqa: N802 (mpi4py's names)
        return 0

    def Get_size(self) -> int:  # noqa: N802
        return 1

    def allreduce(self, value: Any, op: Any = None) -> Any:
        return value

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Any = None) -> None:  # noqa: N802
        _buf(recvbuf)[...] = _buf(sendbuf)

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        _buf(recvbuf)[...] = _buf(sendbuf)

    def Alltoallv(self, sendspec: Any, recvspec: Any) -> None:  # noqa: N802
        src, dst = _buf(sendspec), _buf(recvspec)
        dst[: src.size] = src

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj

    def gather(self, obj: Any, root: int = 0) -> list:
        return [obj]

    def allgather(self, obj: Any) -> list:
        return [obj]

    def Barrier(self) -> None:  # noqa: N802
        pass

    def Abort(self, code: int = 1) -> None:  # noqa: N802
        raise SystemExit(code)


def _buf(spec: Any) -> Any:
    return spec[0] if isinstance(spec, (list, tuple)) else spec


def resolve(comm: Any) -> Any:
    """``comm`` itself, or a :class:`SerialComm` when it is ``None``."""
    return SerialComm() if comm is None else comm


def loaded_mpi() -> Any:
    """mpi4py's ``MPI`` module when a command has loaded it (:mod:`mpinet.engine.world`),
    else ``None``: the engine never starts MPI itself, and a communicator it is given
    means the module is loaded."""
    return sys.modules.get("mpi4py.MPI")


def sum_op() -> Any:
    """``MPI.SUM`` when mpi4py is loaded, else ``None`` (serial)."""
    mod = loaded_mpi()
    return None if mod is None else mod.SUM


def max_op() -> Any:
    """``MPI.MAX`` when mpi4py is loaded, else ``None`` (serial)."""
    mod = loaded_mpi()
    return None if mod is None else mod.MAX


#: set by the CLI's signal watcher (:mod:`mpinet.cli.signals`) once this process is stopping
STOPPING = threading.Event()
_STOP_SIGNALS = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}


def stopping() -> bool:
    """True once this process is stopping on a signal, or while one waits for the watcher.

    The signals are blocked while a command runs (taken by a watcher thread), so a pending
    one is about to stop this process too.
    """
    if STOPPING.is_set():
        return True
    try:
        return bool(signal.sigpending() & _STOP_SIGNALS)
    except (AttributeError, OSError):
        return False


def park(seconds: float = 30.0) -> None:
    """Leave the exit to the signal watcher: what the peers sent may be partial.

    Measured: a rank whose peers had stopped on Ctrl-C completed an ``Alltoallv`` with
    garbage (a node id of -2070313376) before its own watcher acted.
    """
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)


#: default watchdog: a rank waiting this long in one collective call aborts the job
DEFAULT_TIMEOUT = 900.0
_ROLL_CALL_TAG = 7171
#: seconds the waiting ranks listen to each other before the job is aborted
ROLL_CALL = 3.0
#: seconds a waiting rank other than the one that reports leaves it to end the job
REPORT_WAIT = 10.0


class WatchedComm:
    """A communicator whose collective calls give up after ``timeout`` seconds.

    A stopped, hung or dead rank otherwise leaves every other rank waiting
    forever. Buffer collectives run as their non-blocking forms, polled; the
    pickled ones (``allreduce``, ``bcast``, ...) first meet at a polled
    ``Ibarrier``. Past the timeout a waiting rank removes its temporary files
    (:attr:`on_abort`) and calls the roll (each waiting rank sends its rank to
    the others and listens for :data:`ROLL_CALL` seconds); the lowest waiting
    rank prints one line naming :attr:`where` (e.g. ``"step 202"``, set by the
    engine) and the ranks never heard from, and ends the job (exit code 1). The
    other waiting ranks leave the abort to it: an abort from any of them could
    end the reporting rank before its line is out (measured on 4 ranks: no line).
    Everything else is the wrapped communicator's.
    """

    def __init__(self, comm: Any, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._comm = comm
        self.timeout = float(timeout)
        self.where = "setup"
        #: called before the abort (the CLI removes its temporary trace files there)
        self.on_abort: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._comm, name)

    # buffer collectives: the non-blocking form, polled
    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Any = None) -> None:  # noqa: N802
        kw = {} if op is None else {"op": op}
        self._wait(self._comm.Iallreduce(sendbuf, recvbuf, **kw))

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        self._wait(self._comm.Ialltoall(sendbuf, recvbuf))

    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        self._wait(self._comm.Ialltoallv(sendbuf, recvbuf))

    def Barrier(self) -> None:  # noqa: N802
        self._wait(self._comm.Ibarrier())

    # pickled collectives: meet first, then the call (rare, small)
    def allreduce(self, obj: Any, op: Any = None) -> Any:
        self.Barrier()
        return self._checked(
            lambda: self._comm.allreduce(obj) if op is None else self._comm.allreduce(obj, op=op)
        )

    def bcast(self, obj: Any, root: int = 0) -> Any:
        self.Barrier()
        return self._checked(lambda: self._comm.bcast(obj, root=root))

    def allgather(self, obj: Any) -> list:
        self.Barrier()
        return self._checked(lambda: self._comm.allgather(obj))

    def gather(self, obj: Any, root: int = 0) -> list | None:
        self.Barrier()
        return self._checked(lambda: self._comm.gather(obj, root=root))

    def _checked(self, call: Any) -> Any:
        """``call()``, unless this process is stopping on a signal: then wait for the exit.

        Peers that stopped first may have sent part of their data, or made the call fail;
        neither is this job's result.
        """
        try:
            out = call()
        except Exception:
            if stopping():
                park()
            raise
        if stopping():
            park()
        return out

    def _wait(self, req: Any) -> None:
        self._checked(lambda: self._poll(req))

    def _poll(self, req: Any) -> None:
        # MPICH moves a large message only while a rank polls: spin on Test for the time a
        # normal collective takes (measured: a 1 MiB Alltoallv took 409 ms when the polling
        # slept between tests, 1.3 ms when it spun), and only then sleep between tests
        start = time.monotonic()
        while not req.Test():
            waited = time.monotonic() - start
            if waited < 0.05:
                continue
            if waited > self.timeout:
                self._roll_call_and_abort(waited)
            time.sleep(0.0005)  # a late rank: stay responsive without burning a core

    def _roll_call_and_abort(self, waited: float) -> None:
        if self.on_abort is not None:
            # first: from now on any rank's abort may end this process; never keep a stuck
            # job alive over a cleanup failure
            with contextlib.suppress(Exception):
                self.on_abort()
        comm = self._comm
        rank, size = comm.Get_rank(), comm.Get_size()
        me, got = array("q", [rank]), array("q", [0])  # int64 buffers, without numpy
        sent = [comm.Isend(me, dest=r, tag=_ROLL_CALL_TAG) for r in range(size) if r != rank]
        here = {rank}
        end = time.monotonic() + ROLL_CALL
        while time.monotonic() < end and len(here) < size:
            while comm.Iprobe(tag=_ROLL_CALL_TAG):
                comm.Recv(got, tag=_ROLL_CALL_TAG)
                here.add(int(got[0]))
            time.sleep(0.01)
        del sent
        if rank == min(here):
            missing = sorted(set(range(size)) - here)
            who = ", ".join(map(str, missing)) if missing else "none (all arrived late)"
            line = (
                f"mpinet: watchdog: rank {rank} waited {waited:.0f} s in {self.where} for the "
                f"other ranks; rank(s) that did not arrive: {who}. Aborting the job (raise "
                f"--timeout if this is legitimately slow)\n"
            )
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.flush()
                os.write(2, line.encode())
            pmi.drain_stderr()  # the launcher stops reading a rank it ends
        else:
            time.sleep(REPORT_WAIT)  # normally ended by the reporting rank's abort meanwhile
        if pmi.abort(1):  # hydra: without MPI_Abort's own "Abort(1) on node ..." line
            time.sleep(REPORT_WAIT)
        comm.Abort(1)
