"""SIGINT and SIGTERM: remove the trace's temporaries, one line from rank 0, exit 128 + N.

Python runs a signal handler in the main thread between bytecodes, so a rank blocked in an
MPI call (waiting for a rank that is itself stopping) would never run it. While a command
runs (:func:`interrupts`), the two signals are therefore blocked in every thread and taken
by a watcher thread with ``sigtimedwait``, which acts at once whatever the main thread is
doing: it discards every live trace reservation (under the reservation's lock, so never
in the middle of a file creation or of the commit, :mod:`mpinet.trace.reserve`), rank 0
prints one line, and the process ends with ``os._exit(128 + N)``: 130 for SIGINT, 143 for
SIGTERM, without ``MPI_Finalize``, which would wait for ranks that are gone.

Measured with the MPICH wheel's ``mpiexec`` (hydra 5.0): it forwards SIGINT (Ctrl-C) and
SIGTERM to every rank, and when one rank exits it kills the others and exits with that
rank's code. Ranks other than 0 therefore clean up and then wait :data:`GRACE` seconds,
so that rank 0 (the one that prints) exits first and sets the job's exit code; a rank
signalled alone (``kill`` of one rank) says so itself after that wait.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: seconds a rank other than 0 waits for rank 0 to exit first
GRACE = 2.0


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal number (130 SIGINT, 143 SIGTERM)."""
    return 128 + int(signum)


def _message(signum: int, committed: list[str], had_trace: bool) -> str:
    name = signal.Signals(signum).name
    text = f"mpinet: interrupted by {name}; stopped with exit code {exit_code(signum)}"
    if committed:
        text += f"; the trace {committed[0]} had been written completely"
    elif had_trace:
        text += "; no trace written, its temporary files removed"
    return text


def stop(signum: int) -> None:
    """Discard the trace reservations, say so (rank 0), and end the process now."""
    from mpinet.cli import launch_rank, launched_by_mpi
    from mpinet.trace.reserve import abandon_all, live

    rank = launch_rank()
    had_trace = bool(live())
    committed = abandon_all(final_parts=rank == 0)
    line = _message(signum, committed, had_trace)
    if rank != 0 and launched_by_mpi():
        time.sleep(GRACE)  # mpiexec ends this process when rank 0 exits
        line = line.replace("mpinet:", f"mpinet: rank {rank}", 1)
    lead = "\n" if sys.stderr is not None and sys.stderr.isatty() else ""  # after a progress bar
    with contextlib.suppress(OSError):
        os.write(2, f"{lead}{line}\n".encode())
    os._exit(exit_code(signum))


def _watch(done: threading.Event, exiting: threading.Lock) -> None:
    while True:
        info = signal.sigtimedwait(SIGNALS, 1.0)
        with exiting:
            if done.is_set():
                return  # woken by interrupts() leaving, or too late to matter
        if info is not None:
            stop(info.si_signo)


def _python_handler(signum: int, frame: object) -> None:
    # a thread that existed before the mask was set may still receive the signal
    stop(signum)


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """Route SIGINT and SIGTERM to :func:`stop` while the block runs (main thread only).

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
