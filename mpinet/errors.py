"""One hierarchy for every error mpinet raises on purpose.

The CLI catches :class:`MpinetError`, prints its message as one line on
stderr (rank 0 only) and exits with code 2. Messages name the offending
argument and the valid range, so they can be shown to a user as they are.
"""

from __future__ import annotations


class MpinetError(Exception):
    """Base class of all errors mpinet raises deliberately."""


class SpecError(MpinetError, ValueError):
    """A topology spec string that cannot be parsed (``scc:x``, ``foo:3``)."""


class TopologyError(MpinetError, ValueError):
    """Topology parameters out of range, or a bad node id or label."""


class ResourceError(MpinetError):
    """The requested computation would not fit this machine (memory, time)."""


class RoutingError(MpinetError, ValueError):
    """An unknown router, one that does not apply to the topology, or a bad hop."""


class WorkloadError(MpinetError, ValueError):
    """Bad workload parameters."""


class JobError(MpinetError, ValueError):
    """A job file, option or job section that does not fit the schema (``mpinet.jobs``)."""


class MPIError(MpinetError):
    """MPI is missing or unusable (no library, mismatched launch)."""


class OutputError(MpinetError):
    """An output path a command cannot write (``mpinet.outputs``), or a write that failed.

    Refused while planning: exit code 2. A write that failed after the work (a full disk):
    the results are printed and the exit code is 3.
    """


class TraceError(OutputError):
    """A trace file that cannot be written (exists, bad tables) or read (not a trace, version)."""


class CorruptTraceError(TraceError):
    """A trace whose data is damaged: a failed checksum, a truncated or inconsistent column.

    ``mpinet analyze`` exits with code 1 on it (2 is for a path that is not a trace).
    """


#: Every exit code of ``mpinet``: (code, name, when). One table: docs/reference/exit-codes.md
#: is generated from it (scripts/gen_reference.py), and tests/test_manual.py holds the
#: commands' own constants (``OUTPUT_NOT_WRITTEN``, the signals' 128 + N) to it.
EXIT_CODES: tuple[tuple[int | str, str, str], ...] = (
    (0, "ok", "the command did its work: every check passed, the routing is deadlock-free "
     "(deadlock), every catalogue entry holds (verify)"),
    (1, "failed", "the work ran and found a failure: a check of run or sweep failed or packets "
     "were still in flight at max_steps; deadlock found a cycle; verify an entry that does not "
     "hold; analyze damaged data (CorruptTraceError); a rank failed unexpectedly or stopped "
     "answering (the watchdog's --timeout) and the MPI job was aborted"),
    (2, "refused", "refused before any work (MpinetError, argparse): a bad argument, job key, "
     "network file or output path, or a plan that does not fit the machine; one line on "
     "stderr from rank 0, the same on every rank"),
    (3, "output not written", "the results were printed, but an output could not be written "
     "(a trace, --json or --plot file on a full disk; standard output on a full device)"),
    ("128 + N", "signal N", "stopped by a signal, temporaries removed, one line: 129 SIGHUP, "
     "130 SIGINT (Ctrl-C), 143 SIGTERM"),
)  # fmt: skip
