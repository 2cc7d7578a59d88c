"""The line every command prints before numba compiles mpinet's kernels.

numba compiles a kernel at its first call unless its on-disk cache holds it (``mpinet
warmup`` fills the cache). A compilation takes from a second (a random draw) to about a
minute (the iq router's steps), in silence: a user's first ``mpinet booksim`` of BookSim2's
``mesh88_lat`` sat 43 s without a word (issue 35). :class:`Notice` listens to numba's
``numba:compile`` events, which fire on cache misses only, before the compilation starts,
and says on standard error, once per group of kernels (:data:`GROUPS`), what compiles now,
about how long it takes and what compiles it ahead. Rank 0 only; ``--quiet`` silences it.
The line starts ``[mpinet] first run: compiling`` (the catalogue's and the docs' runs drop
such lines: tests/catalogue.py, scripts/docs.py).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

WARMUP = "`mpinet warmup` does it ahead"
ON_RANKS = "`mpiexec -n 2 mpinet warmup` does it ahead"
#: (module prefix, what compiles, seconds, the remedy), the first prefix that matches wins.
#: The seconds: measured on this project's 2-core machine (issue 35, `mpinet warmup` on a
#: fresh cache): the iq router 43 s quiet (129 s at load 5-10), the flit engine 67 s and
#: the multi-rank blocks 55-75 s at load 5-10, the packet engine's calendar 15 s, a network
#: file's graph kernels 12 s, the step-by-step flit kernels 4-7 s, a rate's draws 0.3-0.8 s;
#: at load 14 the iq router took 462 s and the flit engine 276 s (hence "an idle core").
GROUPS: list[tuple[str, str, int, str]] = [
    ("mpinet.engine.flit.iq_ranks", "the iq router's multi-rank kernels", 60, ON_RANKS),
    ("mpinet.engine.flit.rank_", "the flit engine's multi-rank kernels", 60, ON_RANKS),
    ("mpinet.engine.flit.iq_", "the iq router's kernels", 45, WARMUP),
    ("mpinet.engine.flit.", "the flit engine's kernels", 45, WARMUP),
    ("mpinet.engine.", "the packet engine's kernels", 15, WARMUP),
    ("mpinet.topology.", "the network's kernels", 12, WARMUP),
    ("mpinet.routing.", "the router's kernels", 2, WARMUP),
    ("mpinet.rng", "the traffic's random draws", 1, WARMUP),
    ("mpinet.", "mpinet's kernels", 5, WARMUP),
]


def line(module: str) -> str | None:
    """The notice for a kernel of ``module`` (None: not one of mpinet's)."""
    for prefix, what, seconds, remedy in GROUPS:
        if module.startswith(prefix):
            return (f"[mpinet] first run: compiling {what} (once per installation; about "
                    f"{seconds} s on an idle core; {remedy})")  # fmt: skip
    return None


def Notice(say: Any) -> Any:  # noqa: N802 (a class made when numba is imported)
    """A listener of numba's compilations that ``say`` s the group's line at its first one.

    Made here, not at import: a module of mpinet that imports numba at its top is in every
    kernel's cache stamp (:mod:`mpinet.numba_cache`), and an edit of this file would then
    compile every kernel again.
    """
    from numba.core import event

    class _Notice(event.Listener):
        def __init__(self) -> None:
            self.said: set[str] = set()
            self._depth = 0

        def on_start(self, ev: Any) -> None:
            self._depth += 1
            if self._depth > 1:  # a kernel compiled inside another's compilation: said
                return
            fn = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
            text = line(getattr(fn, "__module__", "") or "")
            if text is not None and text not in self.said:
                self.said.add(text)
                say(text)

        def on_end(self, ev: Any) -> None:
            self._depth -= 1

    return _Notice()


def _stderr(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


@contextlib.contextmanager
def notice(args: Any, rank: int):
    """While the command runs: the notice on rank 0's stderr, unless ``--quiet`` or the
    command says what it compiles itself (``compile_notice = False``: warmup), or compiles
    nothing (``compile_notice`` a function of ``args`` that is false: ``verify --list``, which
    then imports no numba)."""
    want = getattr(args, "compile_notice", True)
    if callable(want):
        want = want(args)
    if rank != 0 or getattr(args, "quiet", False) or not want:
        yield None
        return
    from numba.core import event

    listener = Notice(_stderr)
    with event.install_listener("numba:compile", listener):
        yield listener
