"""The flit-level engine: switching modes, multi-flit packets, virtual channels.

See docs/switching.md for the model and :mod:`mpinet.engine.flit.engine` for the step.
"""

from mpinet import numba_cache  # noqa: F401 (an unreadable kernel index compiles again)
