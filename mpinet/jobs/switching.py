"""Jobs on the flit engine (docs/switching.md): what they may set, and which engine runs.

A job whose model has switching keys (``Model.flit``) runs on
:class:`~mpinet.engine.flit.engine.FlitEngine`; every other unicast job on the packet
engine, unchanged. :func:`check_switching` refuses, before any work, what the flit engine
would ignore or cannot run yet; :func:`make_engine` builds the right engine for a plan.
"""

from __future__ import annotations

from typing import Any

from mpinet.jobs.spec import Job, JobError

#: keys of [model] that the flit engine has no use for (it arbitrates by age, keeps no
#: per-link packet queues, and counts buffers in flits)
PACKET_ONLY = {
    "model.order": "the flit engine serves each link oldest packet first (injection step, "
    "then id), always",
    "model.queues": "the flit engine keeps flits in virtual-channel buffers, not packet queues",
}


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
    keys = sorted(k for k in job.given if k.startswith("model.") and k.partition(".")[2] in
                  ("switching", "flits", "vcs", "vc_buffer", "vc_policy"))  # fmt: skip
    what = ", ".join(keys) or "the switching keys"
    if workload.engine != "unicast":
        raise JobError(
            f"{job.source}: {what} {'applies' if len(keys) == 1 else 'apply'} to unicast "
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
    for key, why in PACKET_ONLY.items():
        if key in job.given:
            raise JobError(f"{job.source}: {key} has no effect with {what}: {why}; remove it")
    from mpinet.routing.vc_policies import make_vc_policy

    policy = make_vc_policy(model.vc_policy, router.topo, model.vcs)
    policy.check(router)
    return policy


def make_engine(p: Any, comm: Any, **kw: Any) -> Any:
    """The engine of plan ``p``: the flit engine with switching keys, else the packet
    engine (keyword arguments as :class:`~mpinet.engine.core.Engine` takes them)."""
    if p.model.flit:
        from mpinet.engine.flit.engine import FlitEngine

        for key in ("order", "queues", "faults"):
            kw.pop(key, None)
        return FlitEngine(p.topo, p.router, p.model, p.policy, comm, **kw)
    from mpinet.engine.core import Engine

    return Engine(p.topo, p.router, p.model, comm, **kw)
