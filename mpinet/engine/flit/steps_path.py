"""Which path runs a flit engine's steps: the compiled steps
(:mod:`~mpinet.engine.flit.chunk`) or step by step through Python, and why
(``mpinet run --json``: ``switching.steps``).

Why apart: :mod:`~mpinet.engine.flit.chunk` grew past the house's 400 lines; it names these
as before (``chunk.path``, ``chunk.usable``, ``chunk.COMPILED``).
"""

from __future__ import annotations

from typing import Any

from mpinet.routing import compiled

COMPILED = "compiled steps"


def path(eng: Any) -> str:
    """Which path runs ``eng``'s steps: :data:`COMPILED`, or ``"step by step: <why>"``."""
    if not eng.compiled_steps:
        return "step by step: asked for (compiled_steps=False)"
    hw = eng.router.header_width
    if eng.policy.compiled is None:
        return f"step by step: vc_policy {eng.model.vc_policy!r} has no compiled rule"
    if compiled.rule_of(eng.router) is compiled.NO_HOP:
        why = getattr(eng, "routes_why", "")
        how = getattr(eng, "routes", "")
        return f"step by step: router {eng.router.name!r} has no compiled hop" + (
            f" ({how}: {why})" if why else ""
        )
    if hw > 1:
        return f"step by step: router {eng.router.name!r} carries a header of {hw} words"
    return COMPILED


def usable(eng: Any) -> bool:
    """Whether :class:`~mpinet.engine.flit.chunk.Steps` can run ``eng``'s run (:func:`path`)."""
    return path(eng) == COMPILED
