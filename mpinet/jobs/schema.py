"""The job schema: every key, its type, its default, and what it means.

A job is a TOML file (or the same keys given as ``mpinet run`` flags and
``--set section.key=value``)::

    topology = "ms:3,2"
    seed = 1
    max_steps = 100000

    [workload]              # or: workload = "uniform"
    kind = "uniform"        # uniform | permutation | hotspot | all-to-identity | locality
                            # | broadcast | mnb | te (collectives) | emulate-star
    packets = 8             # per node, with injection = "once"
    injection = "once"      # once | bernoulli | on_off
    rate = 0.05             # bernoulli: probability per node per step
    steps = 200             # bernoulli: number of injection steps
    target = "1234567"      # hotspot: label of the target (default: the identity)
    locality = 0.5          # locality (FCCN): p_k for every level, or [p_2, ..., p_m]
    algorithm = "tree"      # broadcast: flooding | tree | scc-one-port | scc-multi-port |
                            #   hypercube | greedy | ccc (default: flooding all-port, else tree)
                            # mnb: tree (star, ms) | routed (any topology, via [router])
                            # te: schedule (star, ms: one schedule for every node; the
                            #   [router] is not used) | routed (any topology, via [router])
                            #   (default: schedule where it applies)
                            # emulate-star: all-dims | sweep | broadcast | mnb (the star
                            #   algorithm run on the macro-star; default all-dims)
    emulation = "sdc"       # emulate-star: sdc | consecutive | all-port (default: from
                            #   the model; consecutive runs under sdc)
    messages = 1            # broadcast: number of pipelined messages
    interval = 3            # broadcast: initiation interval (default: the paper's)
    source = "<2, 1234>"    # broadcast: the source's label (default: the identity)

    [router]                # or: router = "shortest"
    name = "shortest"
    tie = "first"           # shortest only: first (default) | random among the shortest ports

    [model]                 # or: model = "one-port"
    kind = "all-port"       # all-port | one-port | k-port:K | sdc
    order = "fifo"          # fifo | oldest-first, at each output link
    capacity = { local = 2 }  # packets per link per step, per port class (default 1)
    buffer = 4              # slots per input port (and per injection port); 0 = unbounded
    buffer_classes = "hops" # none | hops: buffer class = hops taken (deadlock-free)
    max_hops = 32           # hops: classes 0..max_hops (the longest route allowed)
    switching = "wormhole"  # store-and-forward (default) | cut-through | wormhole
    flits = 16              # flits per packet (default 1); docs/switching.md
    vcs = 2                 # virtual channels per directed link (default 1)
    vc_buffer = 4           # flit slots per VC (default 4 for wormhole, flits otherwise)
    vc_policy = "hops"      # any (default) | hops | negative-hop: the VC of each hop

    [faults]                # failed links and nodes (default: none)
    links = [["1234", "2134"]]  # pairs of neighbour labels
    nodes = ["4321"]        # labels
    random_links = 0.01     # each link fails with this probability (the job's seed)
    random_nodes = 0.0      # each node fails with this probability
    step = 0                # the faults appear at this step (0: from the start)

    [trace]
    level = "summary"       # none | summary | hops
    path = "run.h5"         # where to write it (or --out); no path = no file

Unknown keys are errors that name the key and list the valid ones; so are
values of the wrong type and numbers that are not finite or out of range
(:data:`RULES`, checked by :mod:`mpinet.values`), and, once the job is planned
(:mod:`mpinet.jobs.settings`), keys that the chosen workload, router, model or
trace level would ignore or that the run could never reach.
"""

from __future__ import annotations

from typing import Any

from mpinet.values import Range, prob_range

REQUIRED = object()

#: section -> key -> (accepted types, default, meaning); docs/reference/job-keys.md is
#: generated from it (scripts/gen_reference.py), which refuses a key without a meaning
SCHEMA: dict[str, Any] = {
    "topology": ((str,), REQUIRED, "topology spec, e.g. scc:6"),
    "seed": ((int,), 0, "key of every random draw"),
    "max_steps": ((int,), 100_000, "stop and report stuck packets after this many steps"),
    "workload": {
        "kind": ((str,), "uniform", "traffic pattern, or broadcast | mnb | te | emulate-star"),
        "packets": ((int,), 1, "packets per node (injection once)"),
        "injection": ((str,), "once", "once | bernoulli | on_off (BookSim's bursty process)"),
        "rate": (
            (float, int),
            None,
            "bernoulli, on_off: packets per node per step (bernoulli: the probability)",
        ),
        "rate_uses_flits": (
            (int,),
            0,
            "1: rate is in flits per node per step (BookSim's injection_rate_uses_flits)",
        ),
        "burst_alpha": ((float, int), 0.5, "on_off: P(off -> on) per step (< 0: derived)"),
        "burst_beta": ((float, int), 0.5, "on_off: P(on -> off) per step (< 0: derived)"),
        "burst_r1": ((float, int), -1.0, "on_off: injection probability when on (< 0: derived)"),
        "steps": ((int,), None, "bernoulli: number of injection steps"),
        "target": ((str, int), None, "hotspot: label of the target (default: the identity)"),
        "hotspot_nodes": (
            (list,),
            None,
            "booksim-hotspot: BookSim's hotspot list (node ids or labels; < 0: drawn at random)",
        ),
        "hotspot_rates": (
            (list,),
            None,
            "booksim-hotspot: each hotspot's integer weight (a shorter list repeats its last)",
        ),
        "burst_initial": (
            (list, int),
            None,
            "on_off: each node's start state, 1 on, 0 off (default: a fair coin per node)",
        ),
        "locality": (
            (float, int, list),
            None,
            "locality (FCCN): p_k for every level, or [p_2, ..., p_m]",
        ),
        "algorithm": (
            (str,),
            None,
            "broadcast algorithm; te: schedule | routed; emulate-star: the star algorithm",
        ),
        "emulation": (
            (str,),
            None,
            "emulate-star: sdc | consecutive | all-port (default: the model)",
        ),
        "messages": ((int,), 1, "broadcast: messages (pipelined)"),
        "interval": ((int,), None, "broadcast: initiation interval (default: the paper's)"),
        "source": ((str, int), None, "broadcast: label of the source (default: the identity)"),
    },
    "router": {
        "name": ((str,), "shortest", "router name"),
        # None: the router's own default; a router without a tie option refuses a tie
        "tie": ((str,), None, "shortest router: first (default) | random among the shortest ports"),
    },
    "model": {
        "kind": ((str,), "all-port", "all-port | one-port | k-port:K | sdc"),
        "order": ((str,), "fifo", "fifo | oldest-first"),
        "queues": ((str,), "auto", "auto | links | calendar (how the engine queues; same answers)"),
        "capacity": (
            (dict,),
            None,
            "packets (flits) per link per step, per port class (default 1)",
        ),
        "buffer": ((int,), 0, "slots per input port and injection port (0 = unbounded)"),
        "buffer_classes": ((str,), "none", "none | hops (structured buffer pool)"),
        "max_hops": ((int,), 32, "buffer_classes = hops: classes 0..max_hops"),
        "switching": ((str,), None, "store-and-forward (default) | cut-through | wormhole"),
        "flits": ((int,), None, "flits per packet (default 1; docs/switching.md)"),
        "vcs": ((int,), None, "virtual channels per directed link (default 1)"),
        "vc_buffer": ((int,), None, "flit slots per VC (default 4 for wormhole, flits otherwise)"),
        "vc_policy": (
            (str,),
            None,
            "the VC of each hop: any (default) | hops | negative-hop | dateline | dateline-turn",
        ),
        "router": ((str,), "ideal", "ideal | iq: BookSim's input-queued router (docs/iq-router)"),
        "iq": ((dict,), None, "[model.iq]: the iq router's keys, BookSim's names and defaults"),
    },
    "faults": {
        "links": ((list,), [], "failed links: pairs of neighbour labels"),
        "nodes": ((list,), [], "failed nodes: labels"),
        "random_links": ((float, int), 0.0, "probability that each link fails (seeded)"),
        "random_nodes": ((float, int), 0.0, "probability that each node fails (seeded)"),
        "step": ((int,), 0, "the step the faults appear (0: from the start)"),
    },
    "trace": {
        "level": ((str,), "summary", "none | summary | hops"),
        "path": ((str,), None, "trace file to write (or --out); no path: no file"),
    },
}
SHORTHAND = {"workload": "kind", "router": "name", "model": "kind"}

#: the valid values of every numeric key (:class:`mpinet.values.Range`): integers, or
#: finite numbers (never NaN or infinite) in their range. Node ids, steps and hop counts
#: are int32 in the engine's packet records, packet ids and seeds int64.
RULES: dict[str, Range] = {
    "seed": Range(0, 2**63 - 1, integer=True),
    "max_steps": Range(1, 2**31 - 2, integer=True),
    "workload.packets": Range(1, 1 << 20, integer=True),
    "workload.rate": prob_range(open_lo=True),
    "workload.steps": Range(1, 1 << 30, integer=True),
    "workload.rate_uses_flits": Range(0, 1, integer=True),
    "workload.burst_alpha": Range(-1, 1),
    "workload.burst_beta": Range(-1, 1),
    "workload.burst_r1": Range(-1, 1),
    "workload.locality": prob_range(),  # one value, or each of a non-empty list
    "workload.burst_initial": Range(0, 1, integer=True),  # one state, or each of a list
    "workload.messages": Range(1, 1 << 20, integer=True),
    "workload.interval": Range(1, 2**31 - 2, integer=True),
    "model.capacity": Range(1, 1 << 20, integer=True),  # each port class's value
    "model.buffer": Range(0, 1 << 20, integer=True),
    "model.max_hops": Range(1, 1024, integer=True),
    "model.flits": Range(1, 1 << 16, integer=True),
    "model.vcs": Range(1, 64, integer=True),
    "model.vc_buffer": Range(1, 1 << 16, integer=True),
    "faults.random_links": prob_range(open_hi=True),
    "faults.random_nodes": prob_range(open_hi=True),
    "faults.step": Range(0, 2**31 - 2, integer=True),
}

#: inclusive bounds of the integer keys (from :data:`RULES`)
BOUNDS: dict[str, tuple[int, int | None]] = {
    k: (int(r.lo), None if r.hi is None else int(r.hi))
    for k, r in RULES.items()
    if r.integer and k != "model.capacity"
}
