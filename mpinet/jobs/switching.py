"""Jobs on the flit engine (docs/switching.md): what they may set, and which engine runs.

A job whose model has switching keys (``Model.flit``) runs on
:class:`~mpinet.engine.flit.engine.FlitEngine`; every other unicast job on the packet
engine, unchanged. :func:`check_switching` refuses, before any work, what the flit engine
would ignore or cannot run yet; :func:`make_engine` builds the right engine for a plan.
"""

from __future__ import annotations

from typing import Any

from mpinet.deadlock.vc_need import check_vcs
from mpinet.engine.compile_clock import mark_engine_start
from mpinet.engine.models import Model, switching_model
from mpinet.jobs.engines import ENGINES, run_engine
from mpinet.jobs.spec import Job, JobError
from mpinet.routing.vc_policies import make_vc_policy

#: keys of [model] that the flit engine has no use for (it arbitrates by age, keeps no
#: per-link packet queues, and buffers flits in virtual channels); given with switching
#: keys they are refused (:func:`mpinet.jobs.settings.check_settings`), 0 or not
_BUFFERS = (
    "model.buffer and model.buffer_classes are packet buffers of the store-and-forward "
    "engine; with switching keys use model.vc_buffer (flit slots per virtual channel) "
    "and model.vc_policy = 'hops' instead"
)
PACKET_ONLY = {
    "model.order": "the flit engine serves each link oldest packet first (injection step, "
    "then id), always; remove it",
    "model.queues": "the flit engine keeps flits in virtual-channel buffers, not packet "
    "queues; remove it",
    "model.buffer": _BUFFERS,
    "model.buffer_classes": _BUFFERS,
    "model.max_hops": "it bounds the packet buffer classes of the store-and-forward engine; "
    "the flit engine's VCs are model.vcs (model.vc_policy = 'hops': VC = hops taken); "
    "remove it",
}
#: the switching keys: any of them given runs the flit engine (unless they say the packet
#: model: store-and-forward of one-flit packets on one VC)
SWITCHING_KEYS = ("switching", "flits", "vcs", "vc_buffer", "vc_policy")


def flit_keys(job: Job) -> str | None:
    """The switching keys ``job`` gives, as a message names them, when they run the flit
    engine; None when it runs on the packet engine."""
    m = job.model
    model = switching_model(Model(), *(m[k] for k in SWITCHING_KEYS))
    if not model.flit:
        return None
    keys = sorted(f"model.{k}" for k in SWITCHING_KEYS if f"model.{k}" in job.given)
    return ", ".join(keys) or "the switching keys"


def check_packet_keys(job: Job) -> None:
    """Refuse a packet-engine key given to a job that runs on the flit engine.

    Raises
    ------
    JobError
        ``job.toml: model.buffer has no effect with model.flits: model.buffer and ...``
    """
    given = [k for k in PACKET_ONLY if k in job.given]
    if not given:
        return
    what = flit_keys(job)
    if what is None:
        return
    key = given[0]  # given at all, 0 or "none" as well: the engine would not read it
    raise JobError(f"{job.source}: {key} has no effect with {what}: {PACKET_ONLY[key]}")


def check_switching(job: Job, model: Any, workload: Any, router: Any, faults: Any) -> Any:
    """Refuse what a flit job cannot run; return its VC policy (None without switching).

    Raises
    ------
    JobError
        A collective, a schedule-driven router (total exchange's schedule, star emulation),
        faults, or a packet-engine key, each with the reason; a VC policy that needs more
        VCs than ``model.vcs`` (:meth:`VCPolicy.check`).
    """
    if not model.flit:
        return None
    what = flit_keys(job) or "the switching keys"
    if workload.engine != "unicast":
        raise JobError(
            f"{job.source}: {what} {'apply' if ',' in what else 'applies'} to unicast "
            f"traffic; workload.kind = {job.workload['kind']!r} runs on the collective engine, "
            "which moves messages whole; remove them"
        )
    if getattr(router, "holds", False):
        raise JobError(
            f"{job.source}: {what}: the router {router.name!r} holds packets until their step "
            "(a schedule), which the flit engine does not run; remove the switching keys"
        )
    if faults is not None:
        raise JobError(
            f"{job.source}: {what} with [faults]: the flit engine does not model failed links "
            "yet; remove one or the other"
        )
    check_packet_keys(job)  # done by check_settings already; kept for direct callers

    policy = make_vc_policy(model.vc_policy, router.topo, model.vcs)
    check_vcs(policy, router)
    return policy


def make_engine(p: Any, comm: Any, **kw: Any) -> Any:
    """The engine of plan ``p``: the flit engine with switching keys, else the packet
    engine (keyword arguments as :class:`~mpinet.engine.core.Engine` takes them).

    Built, it marks the start of the engine's timer for the compile clocks listening
    (:func:`~mpinet.engine.compile_clock.mark_engine_start`): what compiles from here on
    is counted apart from engine time.
    """
    engine = ENGINES[run_engine(p.model)].build(p, comm, **kw)  # imported by a job that runs it
    mark_engine_start()
    return engine
