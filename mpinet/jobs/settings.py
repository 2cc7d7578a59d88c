"""Honest settings: a job key that the run would ignore is an error, not a silence.

A key counts as *set* when the job file or a flag gave it (``Job.given``);
defaults never trigger these errors. Each message names the key, its value
and why it has no effect, so the user can drop it or change what makes it
apply. A step the run can never reach (Bernoulli ``workload.steps`` or
``faults.step`` beyond ``max_steps``) is refused too, whichever of the keys
were given.
"""

from __future__ import annotations

from mpinet.jobs.spec import Job, JobError
from mpinet.jobs.switching import check_packet_keys
from mpinet.workloads.registry import WORKLOADS


def check_settings(job: Job, out: str | None = None) -> None:
    """Refuse keys the workload kind or the trace level would ignore.

    Parameters
    ----------
    job : Job
    out : str, optional
        ``--out``, which overrides ``trace.path``.

    Raises
    ------
    JobError
        ``workload.rate = 0.1 has no effect: applies to injection = 'bernoulli' only; ...``
    """
    kind = job.workload["kind"]
    cls = WORKLOADS.get(kind)  # an unknown kind is refused by make_workload, with the list
    if cls is not None:
        unused = cls.unused_keys(kind, job.workload)
        for key in sorted(k.partition(".")[2] for k in job.given if k.startswith("workload.")):
            if key in unused:
                raise JobError(
                    f"{job.source}: workload.{key} = {job.workload[key]!r} has no effect: "
                    f"{unused[key]}; remove it"
                )
    f = job.faults
    if "faults.step" in job.given and not (
        f["links"] or f["nodes"] or f["random_links"] or f["random_nodes"]
    ):
        raise JobError(
            f"{job.source}: faults.step = {f['step']!r} has no effect without failed links or "
            "nodes; remove it or set faults.links, nodes, random_links or random_nodes"
        )
    _check_reach(job)
    check_packet_keys(job)  # before max_hops's own rule: with flits it means nothing at all
    m = job.model
    if "model.max_hops" in job.given and m["buffer_classes"] != "hops":
        raise JobError(
            f"{job.source}: model.max_hops = {m['max_hops']!r} has no effect: it bounds the "
            "buffer classes of model.buffer_classes = 'hops' only; remove it or set "
            "model.buffer_classes = 'hops' (with a model.buffer)"
        )
    level = job.trace["level"]
    if level == "none":
        if out is not None:
            raise JobError(
                f"--out {out}: trace.level = 'none' writes no trace; drop --out or use "
                "--trace-level summary (or hops)"
            )
        if job.trace["path"] is not None:
            raise JobError(
                f"{job.source}: trace.path = {job.trace['path']!r} has no effect with "
                "trace.level = 'none'; remove it or set trace.level = 'summary'"
            )
    elif "trace.level" in job.given and out is None and job.trace["path"] is None:
        raise JobError(
            f"{job.source}: trace.level = {level!r} has no effect without a trace file; "
            "give --out PATH (or trace.path)"
        )


def _check_reach(job: Job) -> None:
    """Refuse steps the run can never reach: it stops at ``max_steps`` at the latest.

    Bernoulli injection beyond ``max_steps`` used to stop silently there (and the
    summary looked like a complete run); faults at a step beyond it were reported
    as if they had happened.
    """
    w, last = job.workload, job.max_steps
    steps = w["steps"]
    if w["injection"] in ("bernoulli", "on_off") and steps is not None and steps > last:
        raise JobError(
            f"{job.source}: workload.steps = {steps:,} can never take effect: the run stops at "
            f"max_steps = {last:,}, so injection would end there; raise max_steps to at least "
            f"{steps:,} or lower workload.steps"
        )
    _check_arrival(job)
    step = job.faults["step"]
    if step > last:
        raise JobError(
            f"{job.source}: faults.step = {step:,} can never take effect: the run stops at "
            f"max_steps = {last:,} at the latest; lower faults.step or raise max_steps to at "
            f"least {step:,}"
        )


#: a packet's zero-load latency over H hops (docs/switching.md, "Closed forms")
FORMS = {
    "store-and-forward": "H x ceil(L / c)",
    "cut-through": "H + ceil(L / c) - 1",
    "wormhole": "H + ceil(L / c) - 1",
}


def _check_arrival(job: Job) -> None:
    """Refuse packets that cannot arrive by ``max_steps``: over one link, the shortest a
    route can be, a packet of L flits needs ``ceil(L / c)`` steps under every switching
    mode, ``c`` the largest link capacity (a packet injected at step 0 is delivered at
    step ``ceil(L / c)`` at the earliest); the run would end with none delivered."""
    m, last = job.model, job.max_steps
    flits = m["flits"] or 1
    cap = max([1, *(m["capacity"] or {}).values()])
    need = -(-flits // cap)
    if need <= last:
        return
    mode = m["switching"] or "store-and-forward"
    raise JobError(
        f"{job.source}: model.flits = {flits:,} cannot arrive within max_steps = {last:,}: even "
        f"over one link a packet needs ceil(L / c) = {need:,} steps (L = {flits:,} flits, c = "
        f"{cap} flit(s) per step on the fastest link; over H hops {mode} needs "
        f"{FORMS.get(mode, FORMS['wormhole'])}); raise max_steps to at least {need:,} or "
        "lower model.flits"
    )
