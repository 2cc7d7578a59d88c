"""Whether an engine path's kernels are in numba's on-disk cache (the commands say "first
run: compiling ..." when numba starts compiling: :mod:`mpinet.cli.compiling`).

Above the kernel modules it looks into, which it imports (they import
:mod:`mpinet.engine.queue_kernels`; this module cannot live there).
"""

from __future__ import annotations

from mpinet.engine import calendar_kernels, kernels, kernels_check, queue_kernels
from mpinet.engine.flit import chunk, iq_step

#: the kernels every run of each engine path compiles, by module (the others
#: serve finite buffers, faults, sdc or rows from other ranks, and compile when needed)
PATH_KERNELS = {
    "calendar": {
        calendar_kernels: (
            "route_chain",
            "chain_injected",
            "_route_all",
            "place",
            "file_records",
            "fire",
            "gather",
        ),
        kernels_check: ("check_moves",),
    },
    "links": {
        kernels: ("select",),
        queue_kernels: ("enqueue",),
        kernels_check: ("check_moves",),
    },
    "collective": {kernels_check: ("check_moves",)},  # the node programs' model check
    # the flit engine's compiled steps (one rank; the ranks' blocks compile beside them)
    "flit": {chunk: ("run_steps",)},
    "iq": {iq_step: ("run_block",)},  # BookSim's input-queued router (model.router = "iq")
}


def cache_is_warm(path: str = "calendar") -> bool:
    """Whether the kernels of one engine path are in numba's cache, valid for this source.

    The first run of a path compiles them (tens of seconds); the CLI says so
    instead of leaving a silent pause. ``path``: ``"calendar"`` (the departure
    calendar), ``"links"`` (per-link queues), ``"collective"`` (node
    programs), ``"flit"`` (the flit engine's compiled steps) or ``"iq"`` (its
    input-queued router). Each path compiles only its own kernels, so checking one kernel
    of the queues said "first run" on every default (calendar) run. A kernel
    counts as cached when its numba index is there and matches the source
    file's stamp (an edited file is recompiled).
    """
    for mod, names in PATH_KERNELS[path].items():
        for name in names:
            try:  # numba's cache index: {} when missing or stale
                if not getattr(mod, name)._cache._cache_file._load_index():
                    return False
            except (AttributeError, OSError):  # another numba's internals: say nothing wrong
                return True
    return True
