"""Which rank this process is, its communicator, and how the ranks agree, fail and end.

The launcher's environment names the rank before MPI starts (:func:`launch_rank`), so only
rank 0 prints (:func:`say_error`) and a process no launcher started runs serially without
MPI (:func:`get_comm`). Errors found while validating are agreed on by all ranks
(:func:`agree`); anything that fails during the collective phase aborts the whole job
(:func:`collective`); the ranks meet under the watchdog before ``MPI_Finalize``
(:func:`meet_at_exit`). :mod:`mpinet.cli` re-exports these names.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

from mpinet.errors import MPIError, MpinetError

# what each launcher tells its ranks (hydra/MPICH/Intel MPI, Open MPI, PMIx, MVAPICH,
# Slurm, Cray PALS and ALPS, LSF jsrun, Flux): a process that sees none runs serially
# without starting MPI (get_comm), so a launcher missing here would run R lone copies
RANK_VARS = (
    "PMI_RANK",
    "OMPI_COMM_WORLD_RANK",
    "PMIX_RANK",
    "MV2_COMM_WORLD_RANK",
    "SLURM_PROCID",
    "PALS_RANKID",
    "ALPS_APP_PE",
    "JSM_NAMESPACE_RANK",
    "FLUX_TASK_RANK",
)
SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS")


def launch_rank() -> int:
    """This process's rank as told by the launcher's environment (0 if none)."""
    for var in RANK_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def say_error(message: str, where: str = "error") -> None:
    """The CLI's one error printer: ``mpinet: error: MESSAGE`` on rank 0 (capped, one line).

    ``where``: ``"error on rank R"`` for a rank's own line. A standard error that cannot
    be written (a full device) leaves nothing else to tell: the exit code stands.
    """
    from mpinet.cli.stdio import one_line

    if where == "error" and launch_rank() != 0:
        return
    with contextlib.suppress(OSError, ValueError):
        print(f"mpinet: {where}: {one_line(message)}", file=sys.stderr)


def launched_by_mpi() -> bool:
    """True when an MPI launcher (mpiexec, srun) started this process."""
    return any(v in os.environ for v in RANK_VARS + SIZE_VARS)


def _watchdog_seconds(timeout: float | None) -> float:
    """``--timeout``, else ``$MPINET_TIMEOUT``, else the default (``values.TIMEOUT``)."""
    from mpinet.engine.comm import DEFAULT_TIMEOUT
    from mpinet.values import TIMEOUT, env_number

    if timeout is not None:  # 0 or less aborted every MPI job in its first collective
        return TIMEOUT.check("--timeout", timeout)
    return env_number("MPINET_TIMEOUT", DEFAULT_TIMEOUT)


def get_comm(timeout: float | None = None, *, alone_serial: bool = True) -> Any:
    """``COMM_WORLD`` under the watchdog; a serial stand-in when MPI is absent.

    ``timeout``: seconds a rank may wait in one collective call before the job
    is aborted (default ``$MPINET_TIMEOUT`` or 900, see ``mpinet run --help``).
    ``alone_serial`` (the default): a process no launcher started (one rank) takes the
    serial stand-in without starting MPI (its start, as a singleton, is 40-50 ms of CPU and
    0.1 s of wall time of every command; nothing of one rank's run needs it; a launcher sets
    one of :data:`RANK_VARS` / :data:`SIZE_VARS`); False: MPI started as a singleton.
    Every environment variable mpinet reads is validated here, before any work
    (:func:`mpinet.values.check_environment`), and the ranks agree on the outcome.
    The console script's start-up pause of the garbage collector ends here (:func:`console`).
    """
    from mpinet.cli import gc_resume

    gc_resume()
    from mpinet.engine.comm import SerialComm, WatchedComm
    from mpinet.values import check_environment

    err: MpinetError | None = None
    try:
        seconds = _watchdog_seconds(timeout)
        check_environment()
    except MpinetError as exc:
        err, seconds = exc, 0.0
    if alone_serial and not launched_by_mpi():
        comm = SerialComm()
    else:
        from mpinet.engine.world import world  # starts MPI: here, when a command runs

        try:
            comm = world()
        except MPIError:
            if launched_by_mpi():
                raise
            comm = SerialComm()
    if comm.Get_size() == 1:
        if err is not None:
            raise err
        return comm
    agree(comm, lambda: _raise(err))  # one refusal on every rank, before any collective work
    watched = WatchedComm(comm, seconds)
    rank = comm.Get_rank()
    watched.on_abort = lambda: abandon_traces(rank)  # no temporary file left behind
    _WATCHED.append(watched)
    return watched


def _raise(err: MpinetError | None) -> None:
    if err is not None:
        raise err


#: the watched communicators this process made (the console script meets on them at exit)
_WATCHED: list[Any] = []


def meet_at_exit() -> None:
    """A watched barrier before ``MPI_Finalize``: a rank stopped late cannot hang the job.

    ``MPI_Finalize`` waits for every rank without a time limit, so a rank
    stopped or hung after a command's last collective would keep the others
    there for ever; here they wait at most the watchdog's timeout, then name it
    and abort the job, as in any other collective.
    """
    for watched in _WATCHED[-1:]:
        watched.where = "the end of the job (before MPI_Finalize)"
        watched.Barrier()


def agree(comm: Any, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on every rank; if it raised an MpinetError anywhere, raise it on all."""
    try:
        result, err = fn(), None
    except MpinetError as exc:
        result, err = None, exc
    errors = comm.allgather(None if err is None else (type(err).__name__, str(err)))
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        if err is not None:
            raise err
        raise MpinetError(first[1])
    return result


def collective(comm: Any, fn: Callable[[], Any]) -> Any:
    """Run the collective phase; any failure on any rank aborts the whole job.

    ``MPINET_TEST_FAIL_RANK=r`` injects a failure on rank ``r`` (for the tests
    that prove a failing rank never leaves the others hanging).
    """
    try:
        from mpinet.values import env_number

        if env_number("MPINET_TEST_FAIL_RANK") == comm.Get_rank():
            raise RuntimeError("failure injected by MPINET_TEST_FAIL_RANK")
        try:
            if env_number("MPINET_TEST_OOM_RANK") == comm.Get_rank():
                raise MemoryError  # a MemoryError the plan did not foresee, on that rank
            return fn()
        except MemoryError:  # one line naming the limits, never a traceback
            from mpinet.jobs.resources import out_of_memory

            raise out_of_memory(f"rank {comm.Get_rank()}") from None
    except BaseException as exc:
        from mpinet.engine.run import CollectiveError

        if comm.Get_size() > 1 and not isinstance(exc, (SystemExit, CollectiveError)):
            rank = comm.Get_rank()
            if isinstance(exc, MpinetError):
                say_error(str(exc), f"error on rank {rank}")
            else:
                traceback.print_exc()
                print(f"mpinet: rank {rank} failed; aborting the MPI job", file=sys.stderr)
            sys.stderr.flush()
            abandon_traces(rank)  # the abort ends rank 0 too, before it could clean up
            _abort(comm, 2 if isinstance(exc, MpinetError) else 1)
        raise


def _abort(comm: Any, code: int) -> None:
    """End the whole job with ``code``: through the launcher where it allows (hydra: our line
    read first, and no ``Abort(N) on node ...`` line of MPI's own), else ``MPI_Abort``."""
    import time

    from mpinet.engine import pmi

    pmi.drain_stderr()  # the launcher stops reading a rank it ends
    if pmi.abort(code):
        time.sleep(10)  # normally ended by the launcher meanwhile
    comm.Abort(code)


def abandon_traces(rank: int) -> None:
    """Remove the temporaries of every trace this process reserved (best effort)."""
    try:
        from mpinet.trace.reserve import abandon_all

        abandon_all(final_parts=rank == 0)
    except Exception:  # never mask the failure being reported
        pass
