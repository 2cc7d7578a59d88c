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
