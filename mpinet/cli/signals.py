"""SIGINT, SIGTERM and SIGHUP: remove the temporaries, one line from rank 0, exit 128 + N.

Python runs a signal handler in the main thread between bytecodes, so a rank blocked in an
MPI call (waiting for a rank that is itself stopping) would never run it. While a command
runs (:func:`interrupts`), the signals are therefore blocked in every thread and taken
by a watcher thread with ``sigtimedwait``, which acts at once whatever the main thread is
doing: it discards every live output reservation (under the reservation's lock, so never
in the middle of a file creation or of the commit, :mod:`mpinet.trace.reserve`), rank 0
prints one line, and the process ends with ``os._exit(128 + N)``: 130 for SIGINT, 143 for
SIGTERM, 129 for SIGHUP, without ``MPI_Finalize``, which would wait for ranks that are gone.

Under MPICH's ``mpiexec`` (hydra 5.0, measured): it forwards SIGINT and SIGTERM to every
rank, and SIGKILLs every other rank as soon as one exits without having finalized; its
exit code is the OR of the ranks' statuses, and a launcher-killed rank made it 9 with a
"BAD TERMINATION ... Killed" banner (Ctrl-C: 3 runs of 10 on 3 ranks, 10 of 10 on 4).
So each rank, once clean, tells the launcher it leaves in order
(:func:`mpinet.engine.pmi.finalize`) before exiting: no rank is killed, and the job's
code is the ranks' own, whatever their count and the order in which they exit.

A signal sent to one rank only (its sender is not the launcher's proxy, the rank's
parent) is passed to ``mpiexec`` (the proxy's parent), which forwards it to every rank
(SIGHUP as SIGTERM); where there is none, the rank names itself and exits without
finalizing, so that the launcher ends the others. Launchers without hydra's PMI socket:
ranks other than 0 wait :data:`GRACE` seconds, so that rank 0 exits first.

SIGHUP reaches a rank only without a launcher or when sent to it: hydra's ``mpiexec`` does
not forward it but dies of it, and its proxy SIGKILLs every rank before any signal reaches
them (measured); the next command writing the same name removes the temporaries left
(:meth:`mpinet.outputs.reserve.Reservation.take`; docs/reliability.md, "Interrupts").
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
#: seconds a rank other than 0 waits for rank 0 to exit first (launchers without PMI_FD),
#: and a rank signalled alone waits for the launcher to forward the signal it passed on
GRACE = 2.0


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal number (130 SIGINT, 143 SIGTERM, 129 SIGHUP)."""
    return 128 + int(signum)


def _message(signum: int, committed: list[str], nouns: list[str]) -> str:
    """The line rank 0 says; ``nouns``: what each live reservation was (``"trace"``,
    ``"GraphML file"``; ``""`` for a scratch directory)."""
    name = signal.Signals(signum).name
    text = f"mpinet: interrupted by {name}; stopped with exit code {exit_code(signum)}"
    noun = next((n for n in nouns if n), "")
    if committed:
        text += f"; the {noun or 'output'} {committed[0]} had been written completely"
    elif noun:
        text += f"; no {noun} written, its temporary files removed"
    elif nouns:
        text += "; its temporary files removed"
    return text


def _say(line: str) -> None:
    lead = "\n" if sys.stderr is not None and sys.stderr.isatty() else ""  # after a progress bar
    with contextlib.suppress(OSError):
        os.write(2, f"{lead}{line}\n".encode())


def stop(signum: int, alone: bool = False) -> None:
    """Discard the reservations, say so (rank 0), and end the process now.

    ``alone``: only this rank was signalled (not through the launcher); it names itself
    and leaves the launcher to end the other ranks.
    """
    from mpinet.cli import launch_rank, launched_by_mpi
    from mpinet.engine import pmi
    from mpinet.engine.comm import STOPPING
    from mpinet.trace.reserve import abandon_all, live

    STOPPING.set()  # the main thread, if it gets data from stopped peers, waits for the exit
    rank, launched = launch_rank(), launched_by_mpi()
    nouns = [getattr(getattr(r, "kind", None), "noun", "") for r in live()]
    committed = abandon_all(final_parts=rank == 0)
    line = _message(signum, committed, nouns)
    if launched and alone:
        _say(line.replace("mpinet:", f"mpinet: rank {rank}", 1))
        os._exit(exit_code(signum))  # not finalized: the launcher ends the other ranks
    if rank == 0:
        _say(line)
    if launched and not pmi.finalize() and rank != 0:
        time.sleep(GRACE)  # another launcher: rank 0 exits first and sets the job's code
    os._exit(exit_code(signum))


def launcher_pid() -> int | None:
    """``mpiexec`` above this rank on this host: its proxy's parent (Linux ``/proc``)."""
    try:
        with open(f"/proc/{os.getppid()}/stat") as fh:
            grand = int(fh.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{grand}/comm") as fh:
            name = fh.read().strip()
    except (OSError, ValueError, IndexError):
        return None
    return grand if name.startswith(("mpiexec", "mpirun")) else None


def _alone(sender: int) -> bool:
    """A signal not from the terminal (0) nor from the launcher's proxy (the parent)."""
    from mpinet.cli import launched_by_mpi

    return launched_by_mpi() and sender not in (0, os.getppid())


def _pass_on(signum: int) -> bool:
    """Send a one-rank signal to ``mpiexec``, which forwards it to every rank.

    SIGHUP goes as SIGTERM: hydra would die of SIGHUP, its proxies killing every rank
    before any could remove its temporaries.
    """
    pid = launcher_pid()
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGTERM if signum == signal.SIGHUP else signum)
    except OSError:
        return False
    return True


def _watch(done: threading.Event, exiting: threading.Lock) -> None:
    passed: tuple[int, float] | None = None  # a one-rank signal given to the launcher
    while True:
        info = signal.sigtimedwait(SIGNALS, 0.25)
        with exiting:
            if done.is_set():
                return  # woken by interrupts() leaving, or too late to matter
        if info is None:
            if passed is not None and time.monotonic() - passed[1] > GRACE:
                stop(passed[0], alone=True)  # the launcher did not forward it
            continue
        if info.si_signo not in SIGNALS:  # seen once while the process exited: not ours
            continue
        from mpinet.engine.comm import STOPPING

        STOPPING.set()
        alone = _alone(info.si_pid)
        if alone and passed is None and _pass_on(info.si_signo):
            passed = (info.si_signo, time.monotonic())
            continue
        stop(info.si_signo, alone=alone)


def _python_handler(signum: int, frame: object) -> None:
    # a thread that existed before the mask was set may still receive the signal
    stop(signum)


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """Route SIGINT, SIGTERM and SIGHUP to :func:`stop` while the block runs (main thread only).

    The previous signal mask and handlers are restored on leaving, so that calling
    :func:`mpinet.cli.main` in a process (tests) leaves it as it was.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "pthread_sigmask"
    ):
        yield
        return
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)  # new threads inherit it
    old = {s: signal.signal(s, _python_handler) for s in SIGNALS}
    done, exiting = threading.Event(), threading.Lock()
    watcher = threading.Thread(target=_watch, args=(done, exiting), daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with exiting:  # the watcher cannot exit between these two lines
            done.set()
            signal.pthread_kill(watcher.ident, signal.SIGTERM)  # wakes it; it sees done
        watcher.join()
        for s, h in old.items():
            signal.signal(s, h)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
