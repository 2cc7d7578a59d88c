"""``model.router = "iq"``: the job's model with BookSim's input-queued router (docs/iq-router.md).

The iq router runs on the flit engine, wormhole, on the compiled steps of any rank count
(:mod:`mpinet.engine.flit.iq_run`); what it cannot run yet is refused here, before any work.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mpinet.engine.iq_config import IQConfig, check_iq
from mpinet.errors import JobError


def iq_model(model: Any, m: dict, source: str = "<flags>", ranks: int = 1) -> Any:
    """``model`` (after :func:`~mpinet.engine.models.switching_model`) with the router model
    of the job's ``[model]`` section ``m``: unchanged for ``router = "ideal"`` (a ``[model.iq]``
    given with it is refused: it would be ignored).

    Raises
    ------
    JobError
        ``model.iq`` without ``router = "iq"``, a switching other than wormhole, a bad key.
    """
    router = m.get("router") or "ideal"
    if router == "ideal":
        if m.get("iq") is not None:
            raise JobError(f"{source}: [model.iq] has no effect with model.router = 'ideal'; "
                           "set model.router = 'iq' or remove it")  # fmt: skip
        return model
    sw = m.get("switching")
    if sw not in (None, "wormhole"):
        raise JobError(f"{source}: model.router = 'iq' runs wormhole switching (BookSim's "
                       f"vct = 0); model.switching = {sw!r} is not built for it yet")  # fmt: skip
    keys = check_iq(f"{source}: model.iq", m.get("iq"))
    flits = model.flits if model.flit else 1
    vcs = model.vcs if model.flit else 1
    buf = model.vc_buffer if m.get("vc_buffer") is not None else 4
    return replace(model, switching="wormhole", flits=flits, vcs=vcs, vc_buffer=buf, flit=True,
                   router="iq", iq=IQConfig(**keys))  # fmt: skip
