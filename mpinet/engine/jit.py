"""The engine's one way of compiling a kernel.

``cache=True``: compiled code is kept on disk beside the module (``mpinet warmup`` fills
it), so a run pays numba's compilation once per installation. ``nogil=True``: a kernel
releases the GIL while it runs, so the signal watcher's thread (``cli/signals.py``) is
not held up by a long step.
"""

from __future__ import annotations

import numba as nb

from mpinet import numba_cache  # noqa: F401 (an unreadable kernel index compiles again)

#: decorator of the engine's kernels (kernels, kernels_check, calendar_kernels, deadlock)
jit = nb.njit(cache=True, nogil=True)
#: decorator of the small helpers the kernels share: inlined at numba's IR level, because a
#: real call passes every array with a reference-count update each (measured: 1.3 us per
#: move, against 0.29 inlined). numba's disk cache keys a kernel by its own source file: a
#: kernel that inlines a helper of another module keeps the old helper until its cache
#: files are deleted (docs/architecture.md).
inline = nb.njit(cache=True, nogil=True, inline="always")
