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


class JobError(MpinetError, ValueError):
    """A job file, option or job section that does not fit the schema (``mpinet.jobs``)."""


class MPIError(MpinetError):
    """MPI is missing or unusable (no library, mismatched launch)."""


class TraceError(MpinetError):
    """A trace file that cannot be written (exists, bad tables) or read (not a trace, version)."""


class CorruptTraceError(TraceError):
    """A trace whose data is damaged: a failed checksum, a truncated or inconsistent column.

    ``mpinet analyze`` exits with code 1 on it (2 is for a path that is not a trace).
    """


def check_int(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """Return ``value`` as an int, or raise naming ``name`` and ``[lo, hi]``.

    Parameters
    ----------
    name : str
        Argument name used in the message, e.g. ``"n in scc:N"``.
    value : object
        Value to check; strings of decimal digits are accepted.
    lo, hi : int
        Inclusive bounds; ``hi=None`` means unbounded.
    """
    rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
    try:
        if isinstance(value, bool):
            raise TypeError
        iv = int(value)  # type: ignore[call-overload]
        if isinstance(value, float) and iv != value:
            raise TypeError
    except (TypeError, ValueError):
        raise TopologyError(f"{name} must be an integer {rng}, got {value!r}") from None
    if iv < lo or (hi is not None and iv > hi):
        raise TopologyError(f"{name} must be {rng}, got {iv}")
    return iv
