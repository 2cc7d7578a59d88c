"""``mpinet`` command line: one subcommand per module in this package.

Error policy (see docs/architecture.md): a :class:`~mpinet.errors.MpinetError`
becomes one line on stderr, printed by rank 0 only, and exit code 2 on every
rank. Errors found while validating are agreed on by all ranks before any
collective work starts, so no rank waits for another that gave up. Anything
that fails during the collective phase aborts the whole MPI job.

SIGINT, SIGTERM and SIGHUP (:mod:`mpinet.cli.signals`), on every rank from the parse to the
ranks' last barrier: the outputs' temporary files are removed, rank 0 prints one line, and the
exit code is 130, 143 or 129. Standard output and error (:mod:`mpinet.cli.stdio`): a failed
write of the results is one line and exit code 3, a closed pipe a quiet 0, and every error line
(:func:`say_error`, or any ``mpinet: ...:`` line printed) is capped at 400 bytes and escaped.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from mpinet import __version__
from mpinet.cli.ranks import (  # noqa: F401  (the commands import them from mpinet.cli)
    abandon_traces,
    agree,
    collective,
    get_comm,
    launch_rank,
    launched_by_mpi,
    meet_at_exit,
    say_error,
)
from mpinet.errors import MpinetError


class Parser(argparse.ArgumentParser):
    """argparse that stays silent on ranks other than 0, and refuses in one line."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if launch_rank() == 0:
            super()._print_message(message, file)

    def error(self, message: str) -> NoReturn:
        """One line on stderr and exit code 2, like every other refusal (no usage block)."""
        # capped by say_error's stream (cli.stdio.capped) like every error line
        self.exit(2, f"mpinet: error: {message}; `{self.prog} --help` shows the usage\n")


def seed_arg(text: str) -> int:
    """``--seed`` of the commands without a job: the job schema's range (``spec.RULES``)."""
    from mpinet.jobs.spec import RULES
    from mpinet.values import arg

    # mpinet.rng keys by the low 64 bits: 2^64 would be seed 0
    return arg(RULES["seed"], "seed")(text)


def versions() -> str:
    """``mpinet X``, then the versions of what runs it: numba, numpy, mpi4py, the MPI library."""
    import importlib.metadata as md

    def v(dist: str) -> str:
        try:
            return f"{dist} {md.version(dist)}"
        except md.PackageNotFoundError:
            return f"{dist} absent"

    parts = [v("numba"), v("numpy"), v("mpi4py"), v("h5py")]
    try:  # the library's own words (MPICH Version: x.y, Open MPI vx.y ...), started as
        from mpinet.engine.world import world  # started as every command starts it

        world()
        from mpi4py import MPI

        parts.append(" ".join(MPI.Get_library_version().split()[:3])[:60])
    except Exception:  # mpi4py without a library it can load: the version line still prints
        parts.append("no MPI library loaded")
    return f"mpinet {__version__}\n{'; '.join(parts)}"


class _Version(argparse.Action):
    """``--version``: two lines as :func:`versions` writes them (argparse's own action would
    refill them), the MPI library looked up only when asked."""

    def __call__(self, parser: Any, *_: Any) -> NoReturn:
        parser._print_message(versions() + "\n", sys.stdout)  # rank 0's, like --help
        parser.exit()


#: the subcommands, in the order ``mpinet --help`` lists them (one module of this package each)
COMMANDS = ("info", "run", "routes", "deadlock", "export", "verify", "analyze", "bench",
            "sweep", "booksim", "warmup")  # fmt: skip


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full ``mpinet`` parser with every subcommand; ``only``: with that one alone (its
    module alone imported: a command's start does not pay for the others' imports)."""
    import importlib

    epilog = None
    if only is None:  # the top level's help: every family the registry has, never a stale list
        from mpinet.topology import spec_forms

        epilog = (
            f"Topology specs: {' '.join(spec_forms())} file:PATH (ims: incomplete and cms: "
            "clustered macro-star, e.g. ims:2+2,3,3; cayley: the Cayley graph of S_K from "
            "generators in cycle notation, quoted, e.g. 'cayley:4:(1,2),(1,3),(1,4)' is star:4; "
            "file: a network read from an edge list, GraphML or BookSim anynet file; the README's "
            "Topologies table and docs/networks.md have each). "
            "`mpinet COMMAND --help` explains each command."
        )
    p = Parser(
        prog="mpinet",
        description=(
            "Emulate interconnection networks (SCC, macro-star, FCCN, Borel Cayley, star, "
            "hypercube, CCC) on an MPI job. Run under `mpiexec -n R mpinet ...` to split the "
            "work over R ranks; results do not depend on R."
        ),
        epilog=epilog,
    )
    p.add_argument("--version", action=_Version, nargs=0, help="print the versions and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"mpinet.cli.{name}").add_parser(sub)
    return p


def _command_of(argv: Sequence[str] | None) -> str | None:
    """The subcommand ``argv`` names first (before any option), or None (then the full
    parser: ``--help``, ``--version``, a misspelt command)."""
    args = sys.argv[1:] if argv is None else list(argv)
    return args[0] if args and args[0] in COMMANDS else None


def main(argv: Sequence[str] | None = None, *, meet: bool = False) -> int:
    """Entry point of the ``mpinet`` console script; returns the exit code.

    ``meet``: end with the ranks' watched barrier (:func:`meet_at_exit`), inside the
    signal handling like the command itself (the console script; a rank that finished
    first, e.g. every rank but 0 during ``export``, waits there).
    """
    from mpinet.cli.signals import interrupts, launcher_pid
    from mpinet.cli.stdio import StreamError, guard

    launcher = launcher_pid() if launch_rank() == 0 and launched_by_mpi() else None
    # SIGINT/SIGTERM/SIGHUP: clean up, one line, exit 128 + N; first of all, so that every
    # thread started later (numpy's BLAS pool, MPI) leaves the signals to the watcher; the
    # error lines inside the guarded streams too (capped; a launcher's full stderr checked)
    with interrupts(), guard(launcher):
        try:
            args = build_parser(_command_of(argv)).parse_args(argv)
            from mpinet.cli.compiling import notice

            with notice(args, launch_rank()):  # a line before numba compiles (a first run)
                code = int(args.func(args) or 0)
            sys.stdout.flush()  # here, not at exit: a full device is one line
        except StreamError as exc:
            code = _stream_failed(exc)
        except MpinetError as exc:
            say_error(str(exc))
            code = 2
        except MemoryError:  # outside the collective phase: one line, as a plan's refusal
            from mpinet.jobs.resources import out_of_memory

            say_error(str(out_of_memory("mpinet")))
            code = 2
        except KeyboardInterrupt:  # only where interrupts() could not take the signal
            abandon_traces(launch_rank())
            if launch_rank() == 0:
                print("mpinet: interrupted by SIGINT; stopped with exit code 130", file=sys.stderr)
            code = 130
        except SystemExit:  # argparse: --help, --version, a refusal
            with contextlib.suppress(StreamError):
                sys.stdout.flush()
            if sys.stdout.failed is not None:
                raise SystemExit(_stream_failed(sys.stdout.failed)) from None
            raise
        if meet:
            meet_at_exit()
        return code


#: exit code of a command whose results could not be written to standard output
OUTPUT_NOT_WRITTEN = 3


def _stream_failed(exc: Any) -> int:
    """stdout failed: EPIPE (the reader went away) is a quiet 0, anything else one line, 3."""
    if exc.quiet:
        return 0
    say_error(str(exc))
    return OUTPUT_NOT_WRITTEN


#: the console script paused the cyclic garbage collector for its start-up (:func:`console`)
_GC_PAUSED: list[bool] = []


def gc_resume() -> None:
    """End the start-up pause of :func:`console`: the objects made so far (modules, classes,
    numba's tables: some 120,000, nearly all kept for the process's life) are frozen out of
    the collector's scans, and the collector runs again for the command's own work."""
    if _GC_PAUSED:
        _GC_PAUSED.clear()
        gc.freeze()
        gc.enable()


def console() -> None:
    """Console-script wrapper: run the command, meet the other ranks, exit with the code.

    The cyclic garbage collector is paused while the process starts (imports, parsing) and
    resumed when the command starts its work (:func:`get_comm`, or ``analyze``'s run); at
    exit what is
    left is frozen, so the interpreter's last collections do not scan it (the OS frees the
    memory). Both only skip scans of objects that live until the end: measured on
    ``mpinet booksim meshconfig``, 0.1 s of start-up and 0.25 s at exit, of some 1.3 s of CPU
    (docs/performance.md, "mpinet booksim meshconfig, end to end").
    """
    if gc.isenabled():
        gc.disable()
        _GC_PAUSED.append(True)
    try:
        code = main(meet=True)
    finally:
        gc_resume()
    gc.freeze()
    sys.exit(code)
