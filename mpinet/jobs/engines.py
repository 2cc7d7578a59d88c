"""The engines a unicast job runs on, by name: ``ENGINES``, a lazy registry
(:class:`~mpinet.lazy.LazyRegistry`), so that a job imports its own engine only.

Each entry is the jobs layer's side of one engine (its kernels' preload, its build from a
plan, its memory plan): ``"packet"`` (:mod:`mpinet.jobs.engine_packet`, store-and-forward
on :class:`~mpinet.engine.core.Engine`) and ``"flit"`` (:mod:`mpinet.jobs.engine_flit`,
:class:`~mpinet.engine.flit.engine.FlitEngine`, both router models). A packet run then
imports none of the flit engine's modules (45 of them, and their kernels;
docs/performance.md, "mpinet booksim meshconfig, end to end", session 14).
"""

from __future__ import annotations

from typing import Any

from mpinet.engine.models import Model, parse_model, switching_model
from mpinet.errors import MpinetError
from mpinet.lazy import LazyRegistry

#: engine name -> the jobs layer's side of that engine (a class with ``name``)
ENGINES = LazyRegistry(
    [
        ("packet", "mpinet.jobs.engine_packet", "PacketEngineJobs"),
        ("flit", "mpinet.jobs.engine_flit", "FlitEngineJobs"),
    ]
)


def run_engine(model: Model) -> str:
    """The name of the engine that runs a built ``model``: ``"flit"`` with switching keys
    (or ``router = "iq"``, which runs on it), else ``"packet"``."""
    return "flit" if model.flit else "packet"


def flit_model(model: dict) -> Model | None:
    """The :class:`~mpinet.engine.models.Model` the flit engine runs for a job's ``[model]``
    section, or None: the packet engine runs it, or its keys are refused later (by the
    same :func:`~mpinet.engine.models.switching_model` the run calls)."""
    try:
        m = switching_model(parse_model("all-port"), model.get("switching"), model.get("flits"),
                            model.get("vcs"), model.get("vc_buffer"),
                            model.get("vc_policy"))  # fmt: skip
    except (MpinetError, TypeError, ValueError):
        return None
    return m if m.flit else None


def job_engine(model: dict) -> str:
    """The name of the engine a job's ``[model]`` section will most likely run on, before
    its model is built: ``"flit"`` for switching keys that say so or ``router = "iq"``, else
    ``"packet"`` (keys refused later count as the packet engine's: nothing runs then)."""
    iq = (model.get("router") or "ideal") == "iq"
    return "flit" if iq or flit_model(model) is not None else "packet"


def engine_jobs(name: str) -> Any:
    """The jobs layer's side of engine ``name`` (imported at its first lookup)."""
    return ENGINES[name]
