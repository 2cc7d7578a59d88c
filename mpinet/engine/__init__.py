"""The engine: the only layer that talks to MPI (through a ``comm`` parameter)."""
