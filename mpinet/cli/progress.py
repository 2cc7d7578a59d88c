"""Progress of a long command on rank 0, shared by ``run``, ``info``, ``routes``, ``verify``
and ``analyze``.

Where it goes (:func:`for_command`): nowhere with ``--quiet``; to stderr with
``--progress`` (one line rewritten with ``\\r`` if stderr is a terminal, else plain lines
that a log keeps); otherwise, and not with ``--json``, to the terminal if there is one.

Under ``mpiexec`` rank 0's stderr is a pipe to the launcher, and MPICH's hydra (and others)
start every rank in a session of its own (``setsid``), so a rank has no controlling
terminal: opening ``/dev/tty`` fails with ENXIO. The terminal is still there:
:func:`launcher_terminal` walks up the process tree (Linux ``/proc``) to the first ancestor
that has a controlling terminal — the launcher — and takes that terminal if the launcher's
own stderr is it and the launcher runs in its foreground (not ``&``, not ``2> log``, not
piped), i.e. exactly when the launcher's stderr would have shown a progress line.

Updates are throttled: nothing before :data:`DELAY` seconds (``$MPINET_PROGRESS_DELAY``
overrides it), then at most :data:`TTY_INTERVAL` apart on a terminal, and on a pipe one line
every ``elapsed / 5`` seconds, between 1 and 30 (a Slurm log of an hour's run gets ~150
lines). Callers pass a function that builds the text, so a skipped update costs one clock
read. Writing never blocks the run and never fails it: a write error switches progress off.
The engine layers only call the callbacks they are given; they never print.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

#: seconds before the first update: short commands print nothing
DELAY = 2.0
#: seconds between updates of the line on a terminal (4 per second)
TTY_INTERVAL = 0.25
#: bounds of the seconds between plain lines on a pipe
LINE_INTERVAL = (1.0, 30.0)
#: ancestors searched for the launcher's terminal (rank -> proxy -> mpiexec is 2)
MAX_DEPTH = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--progress`` and ``--quiet`` (mutually exclusive) to a command's parser."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument(
        "--progress",
        action="store_true",
        help="progress on stderr, even without a terminal",
    )
    g.add_argument("--quiet", action="store_true", help="no progress output")


class Progress:
    """A throttled progress line (``stream`` None: switched off, every call a no-op).

    Parameters
    ----------
    stream : text stream or None
    tty : bool
        Rewrite one line with ``\\r`` (a terminal), else write one line per update.
    delay : float, optional
        Seconds before the first update (default :data:`DELAY` or
        ``$MPINET_PROGRESS_DELAY``).
    clock : callable
        Monotonic seconds (tests pass a fake one).
    owned : bool
        Close ``stream`` at :meth:`close` (a terminal opened for the progress).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        tty: bool = False,
        delay: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        owned: bool = False,
    ) -> None:
        if delay is None:
            from mpinet.values import env_number

            delay = env_number("MPINET_PROGRESS_DELAY", DELAY)
        self.stream, self.tty, self.clock, self.owned = stream, tty, clock, owned
        self.t0 = clock()
        self.next = self.t0 + delay
        self.width = 0  # characters of the line now shown (tty)

    @property
    def enabled(self) -> bool:
        return self.stream is not None

    def __call__(self, text: Callable[[], str] | str) -> None:
        """Show ``text`` (or ``text()``, built only when an update is due)."""
        if self.stream is None:
            return
        now = self.clock()
        if now < self.next:
            return
        elapsed = now - self.t0
        if self.tty:
            self.next = now + TTY_INTERVAL
        else:
            lo, hi = LINE_INTERVAL
            self.next = now + min(hi, max(lo, elapsed / 5))
        line = f"[mpinet] {text() if callable(text) else text}  ({_clock(elapsed)})"
        if self.tty:
            line = line[: _columns(self.stream) - 1]
            pad = " " * max(0, self.width - len(line))
            self.width = len(line)
            self._write(f"\r{line}{pad}")
        else:
            self._write(line + "\n")

    def clear(self) -> None:
        """Take the line off the terminal (before other output); it comes back at the next
        update, at least :data:`TTY_INTERVAL` later."""
        if self.stream is not None and self.tty and self.width:
            self._write("\r" + " " * self.width + "\r")
            self.width = 0
            self.next = max(self.next, self.clock() + TTY_INTERVAL)

    def close(self) -> None:
        """Clear the line and stop; later calls do nothing."""
        self.clear()
        stream, self.stream = self.stream, None
        if stream is not None and self.owned:
            with contextlib.suppress(OSError):
                stream.close()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # terminal gone, flow-controlled, closed: stop quietly
            self.stream = None

    # -- callbacks for the layers below (the signatures they document) --------------------
    def counter(self, what: str) -> Callable[[int, int], None]:
        """A ``progress(done, total)`` callback shown as ``what 34.5% (done of total)``."""

        def update(done: int, total: int) -> None:
            pct = 100.0 * done / total if total else 100.0
            self(lambda: f"{what} {pct:.1f}% ({done:,} of {total:,})")

        return update

    def engine(self, step: int, delivered: int, injected: int, in_flight: int) -> None:
        """:class:`~mpinet.engine.core.Engine`'s ``progress``."""
        self(
            lambda: (
                f"step {step:,}  delivered {delivered:,} of {injected:,} "
                f"({100.0 * delivered / injected if injected else 100.0:.1f}%)  "
                f"in flight {in_flight:,}"
            )
        )

    def collective(self, step: int, transmissions: int, informed: int, wanted: int) -> None:
        """:func:`~mpinet.engine.collective.run_collective`'s ``progress``."""
        self(
            lambda: (
                f"step {step:,}  transmissions {transmissions:,}  informed {informed:,}"
                + (f" of {wanted:,} ({100.0 * informed / wanted:.1f}%)" if wanted else "")
            )
        )


def _clock(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour."""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


def _columns(stream: TextIO) -> int:
    try:
        cols = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        cols = 0
    return max(20, cols) if cols else 80  # 0: a terminal that never set its size


def _proc_stat(pid: int) -> tuple[int, int, int, int]:
    """``(ppid, pgrp, tty_nr, tpgid)`` of ``pid`` from ``/proc/PID/stat``."""
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces
    return int(fields[1]), int(fields[2]), int(fields[4]), int(fields[5])


def launcher_terminal(pid: int | None = None, max_depth: int = MAX_DEPTH) -> str | None:
    """Path of the terminal the MPI launcher above ``pid`` shows its stderr on, or None.

    The launcher is the nearest ancestor with a controlling terminal (the ranks and the
    proxies between have none under hydra). Its terminal counts only if the launcher's
    stderr is that terminal and the launcher is in its foreground process group. Linux
    only (``/proc``); None elsewhere or when anything cannot be read.
    """
    try:
        pid = os.getppid() if pid is None else _proc_stat(pid)[0]
        for _ in range(max_depth):
            if pid <= 1:
                return None
            ppid, pgrp, tty, tpgid = _proc_stat(pid)
            if tty:
                st = os.stat(f"/proc/{pid}/fd/2")
                if tpgid != pgrp or not stat.S_ISCHR(st.st_mode) or st.st_rdev != tty:
                    return None
                return os.readlink(f"/proc/{pid}/fd/2")
            pid = ppid
    except (OSError, ValueError, IndexError):
        pass
    return None


def open_terminal(path: str) -> TextIO | None:
    """``path`` opened for writing without becoming our controlling terminal, or None.

    Non-blocking: a terminal stopped by flow control (Ctrl-S) makes a write fail, which
    switches progress off, rather than stopping the rank.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return None
    if not os.isatty(fd):
        os.close(fd)
        return None
    return os.fdopen(fd, "w", encoding="utf-8", errors="replace")


def terminal() -> tuple[TextIO | None, bool]:
    """``(stream, tty)``: stderr if it is a terminal, else the MPI launcher's terminal."""
    from mpinet.cli import launched_by_mpi

    if sys.stderr is not None and sys.stderr.isatty():
        return sys.stderr, True
    if not launched_by_mpi():
        return None, False
    path = launcher_terminal()
    stream = open_terminal(path) if path else None
    return stream, stream is not None


def for_command(args: argparse.Namespace, rank: int) -> Progress:
    """The progress of a command on this rank (off except on rank 0; module docstring)."""
    if rank != 0 or getattr(args, "quiet", False):
        return Progress()
    if getattr(args, "progress", False):
        tty = sys.stderr is not None and sys.stderr.isatty()
        return Progress(sys.stderr, tty=tty)
    if getattr(args, "json", False):  # a machine reads stdout; keep the terminal quiet too
        return Progress()
    stream, tty = terminal()
    return Progress(stream, tty=tty, owned=stream is not None and stream is not sys.stderr)


def off(*_: Any) -> None:
    """A callback that does nothing."""
