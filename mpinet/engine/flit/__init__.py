"""The flit-level engine: switching modes, multi-flit packets, virtual channels.

See docs/switching.md for the model and :mod:`mpinet.engine.flit.engine` for the step.
"""
