"""Work that rank 0 does alone (``deadlock``, ``export``) while the other ranks wait.

Under ``mpiexec`` the other ranks wait in a watched collective (the watchdog of
:func:`mpinet.cli.get_comm`). Three ways rank 0 can stop, and what the others see:

* it is killed (the kernel's OOM killer, ``kill -9``): MPICH's hydra ends the whole job
  at once (measured: exit 9 and its "BAD TERMINATION" banner within a second);
* it raises an :class:`~mpinet.errors.MpinetError` or runs out of memory: the command
  hands the error to every rank (``agree``), one line and exit code 2;
* it raises anything else: :func:`alone` aborts the job (``cli.collective``), instead
  of leaving the interpreter to wait in ``MPI_Finalize`` while the others wait for it
  (what a ``MemoryError`` traceback did: the other rank sat there for the watchdog's
  15 minutes).

The watchdog stays for a rank 0 that is stopped or hung; :func:`wait_for_rank0` lets
the waiting ranks allow for the work's estimated time first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mpinet.cli import collective
from mpinet.errors import MpinetError

#: the waiting ranks allow this many times the work's estimated time
MARGIN = 5


def alone(comm: Any, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on this rank (rank 0); an MpinetError is raised here as usual, anything
    else aborts the whole MPI job (serially it propagates)."""

    def guarded() -> tuple:
        try:
            return fn(), None
        except MpinetError as exc:
            return None, exc

    value, err = collective(comm, guarded)
    if err is not None:
        raise err
    return value


def wait_for_rank0(comm: Any, seconds: float, where: str) -> None:
    """Let this waiting rank allow ``MARGIN`` times ``seconds`` (at least the watchdog's
    own timeout) before it calls rank 0 stopped, naming ``where``."""
    if hasattr(comm, "timeout"):
        comm.timeout = max(float(comm.timeout), MARGIN * float(seconds))
        comm.where = where
