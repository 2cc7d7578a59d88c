"""Every key of BookSim2's ``booksim_config.cpp``: its default, and what mpinet does with it.

One table, :data:`KEYS`; docs/booksim.md's key table is generated from it
(:func:`markdown`, checked by tests/test_booksim_config.py). Each key is

* ``model``: run as stated (the job key it becomes in ``maps``);
* ``diff``: accepted, and treated differently (``note`` says how; docs/booksim.md lists it);
* ``iq``: a key of BookSim's input-queued router (``router = iq``, BookSim's default): those
  mpinet's iq model has (:data:`~mpinet.engine.iq_config.INT_KEYS` ...) become
  ``[model.iq]``, the others are refused unless default; with ``router = ideal`` (mpinet's
  ideal router) none is modeled: they are accepted and listed as "not modeled by the ideal
  router" in the output and in ``--json``;
* ``refuse``: accepted at its default, refused in one line naming it otherwise (never
  silently ignored).

Slots (``i``, ``f``, ``s``; BookSim keeps an integer, a real and a string map): the
kinds of value the key takes; a key with a number slot and ``s`` takes a one-element
list too (BookSim's per-class vectors; mpinet runs one traffic class).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Key:
    name: str
    slots: str  # i | f | s | is | fs
    default: Any
    what: str  # model | diff | iq | refuse
    note: str = ""


_M, _D, _Q, _R = "model", "diff", "iq", "refuse"
_ROUTER = "a detail of BookSim's input-queued router mpinet's iq model does not have"
_IQ = "model.iq.{} (router = iq); not modeled by the ideal router"


def _k(name: str, slots: str, default: Any, what: str, note: str = "") -> Key:
    return Key(name, slots, default, what, note)


#: the keys, in booksim_config.cpp's order
KEYS: dict[str, Key] = {k.name: k for k in (
    _k("channel_file", "s", "", _R, "per-channel latencies (not modeled: every link is one step)"),
    _k("subnets", "i", 1, _R, "one network"),
    _k("topology", "s", "torus", _M, "mesh -> mesh:K,N; torus -> torus:K,N; "
       "anynet -> file:anynet:network_file"),
    _k("k", "i", 8, _M, "K of mesh:K,N / torus:K,N"),
    _k("n", "i", 2, _M, "N of mesh:K,N / torus:K,N"),
    _k("c", "i", 1, _R, "one terminal per router (concentration 1)"),
    _k("routing_function", "s", "none", _M, "mesh: dor, dim_order -> router dor; torus: "
       "dim_order -> dor (vc_policy dateline-turn); anynet: min -> anynet-min"),
    _k("use_noc_latency", "i", 1, _D, "router = iq: model.iq.channel_latency 2 on a torus, 1 "
       "on a mesh, as BookSim's; ideal router: every link is one step"),
    _k("x", "i", 8, _R, "cmesh and flatfly sizes"),
    _k("y", "i", 8, _R, "cmesh and flatfly sizes"),
    _k("xr", "i", 1, _R, "cmesh and flatfly sizes"),
    _k("yr", "i", 1, _R, "cmesh and flatfly sizes"),
    _k("link_failures", "i", 0, _R, "failed links (mpinet's flit engine has no faults yet)"),
    _k("fail_seed", "is", 0, _R, "failed links"),
    _k("in_ports", "i", 5, _R, "fixed port counts of some topologies"),
    _k("out_ports", "i", 5, _R, "fixed port counts of some topologies"),
    _k("router", "s", "iq", _M, "iq: model.router = iq (BookSim's input-queued router, "
       "docs/iq-router.md); ideal (mpinet's value): the flit engine's ideal router"),
    _k("output_delay", "i", 0, _Q, _ROUTER),
    _k("credit_delay", "i", 0, _Q, _IQ.format("credit_delay")),
    _k("internal_speedup", "f", 1.0, _Q, _IQ.format("internal_speedup")),
    _k("output_buffer_size", "i", -1, _Q, _ROUTER),
    _k("noq", "i", 0, _Q, _ROUTER),
    _k("speculative", "i", 0, _Q, _IQ.format("speculative")),
    _k("spec_check_elig", "i", 1, _Q, _ROUTER),
    _k("spec_check_cred", "i", 1, _Q, _ROUTER),
    _k("spec_mask_by_reqs", "i", 0, _Q, _ROUTER),
    _k("spec_sw_allocator", "s", "prio", _Q, _ROUTER),
    _k("num_vcs", "i", 16, _M, "model.vcs"),
    _k("vc_buf_size", "i", 8, _M, "model.vc_buffer"),
    _k("buf_size", "i", -1, _Q, _ROUTER),
    _k("buffer_policy", "s", "private", _Q, _ROUTER),
    _k("private_bufs", "i", -1, _Q, _ROUTER),
    _k("private_buf_size", "is", 1, _Q, _ROUTER),
    _k("private_buf_start_vc", "is", -1, _Q, _ROUTER),
    _k("private_buf_end_vc", "is", -1, _Q, _ROUTER),
    _k("max_held_slots", "i", -1, _Q, _ROUTER),
    _k("feedback_aging_scale", "i", 1, _Q, _ROUTER),
    _k("feedback_offset", "i", 0, _Q, _ROUTER),
    _k("wait_for_tail_credit", "i", 0, _Q, _IQ.format("wait_for_tail_credit")),
    _k("vc_busy_when_full", "i", 0, _Q, _ROUTER),
    _k("vc_prioritize_empty", "i", 0, _Q, _ROUTER),
    _k("vc_priority_donation", "i", 0, _Q, _ROUTER),
    _k("vc_shuffle_requests", "i", 0, _Q, _ROUTER),
    _k("hold_switch_for_packet", "i", 0, _Q, _ROUTER),
    _k("input_speedup", "i", 1, _Q, _IQ.format("input_speedup")),
    _k("output_speedup", "i", 1, _Q, _IQ.format("output_speedup")),
    _k("routing_delay", "i", 1, _Q, _IQ.format("routing_delay")),
    _k("vc_alloc_delay", "i", 1, _Q, _IQ.format("vc_alloc_delay")),
    _k("sw_alloc_delay", "i", 1, _Q, _IQ.format("sw_alloc_delay")),
    _k("st_prepare_delay", "i", 0, _Q, _IQ.format("st_prepare_delay")),
    _k("st_final_delay", "i", 1, _Q, _IQ.format("st_final_delay")),
    _k("vct", "i", 0, _M, "1 -> model.switching = cut-through (else wormhole)"),
    _k("vc_allocator", "s", "islip", _Q, _IQ.format("vc_allocator")),
    _k("sw_allocator", "s", "islip", _Q, _IQ.format("sw_allocator")),
    _k("arb_type", "s", "round_robin", _Q, _ROUTER),
    _k("alloc_iters", "i", 1, _D, "accepted and, as in BookSim2's iq router, not applied: "
       "iq_router.cpp builds its allocators without the configuration, so iSLIP runs one "
       "iteration whatever the key says (measured: the same output for 1, 2 and 3); "
       "model.iq.alloc_iters stays 1"),
    _k("classes", "i", 1, _R, "one traffic class"),
    _k("traffic", "s", "uniform", _M, "workload.kind: uniform -> booksim-uniform (the "
       "source included), transpose -> booksim-transpose, hotspot -> booksim-hotspot, the "
       "others by their name; patterns with parameters refused"),
    _k("class_priority", "is", 0, _R, "one traffic class"),
    _k("perm_seed", "is", 0, _R, "randperm's own seed (mpinet keys it by seed)"),
    _k("injection_rate", "fs", 0.1, _M, "workload.rate (packets per node per step)"),
    _k("injection_rate_uses_flits", "i", 0, _M, "workload.rate_uses_flits (rate / packet_size)"),
    _k("packet_size", "is", 1, _M, "model.flits (one size)"),
    _k("packet_size_rate", "is", 1, _R, "one packet size"),
    _k("injection_process", "s", "bernoulli", _M, "workload.injection: bernoulli | on_off"),
    _k("burst_alpha", "f", 0.5, _M, "workload.burst_alpha (on_off)"),
    _k("burst_beta", "f", 0.5, _M, "workload.burst_beta (on_off)"),
    _k("burst_r1", "f", -1.0, _M, "workload.burst_r1 (on_off)"),
    _k("priority", "s", "none", _R, "packet priorities"),
    _k("batch_size", "i", 1000, _R, "sim_type = batch"),
    _k("batch_count", "i", 1, _R, "sim_type = batch"),
    _k("max_outstanding_requests", "i", 0, _R, "request-reply traffic"),
    _k("use_read_write", "is", 0, _R, "request-reply traffic"),
    _k("write_fraction", "fs", 0.5, _R, "request-reply traffic"),
    *(_k(f"{a}_{b}_{c}", "i", d, _R, "request-reply traffic") for a, b, c, d in (
        ("read", "request", "begin_vc", 0), ("read", "request", "end_vc", 5),
        ("write", "request", "begin_vc", 2), ("write", "request", "end_vc", 7),
        ("read", "reply", "begin_vc", 8), ("read", "reply", "end_vc", 13),
        ("write", "reply", "begin_vc", 10), ("write", "reply", "end_vc", 15),
        ("read", "request", "subnet", 0), ("read", "reply", "subnet", 0),
        ("write", "request", "subnet", 0), ("write", "reply", "subnet", 0))),
    *(_k(f"{a}_{b}_size", "is", 1, _R, "request-reply traffic")
      for a in ("read", "write") for b in ("request", "reply")),
    _k("sim_type", "s", "latency", _M, "latency | throughput: the measurement (docs/booksim.md)"),
    _k("warmup_periods", "i", 3, _M, "sample periods of warm-up"),
    _k("sample_period", "i", 1000, _M, "steps per sample period"),
    _k("max_samples", "i", 10, _M, "sample periods at most"),
    _k("measure_stats", "is", 1, _R, "one measured class"),
    _k("pair_stats", "i", 0, _R, "per-pair statistics"),
    _k("latency_thres", "fs", 500.0, _M, "abort as unstable above this mean latency"),
    _k("warmup_thres", "fs", 0.05, _M, "warm-up change threshold (warmup_periods = 0)"),
    _k("acc_warmup_thres", "fs", 0.05, _M, "warm-up change threshold of the accepted rate"),
    _k("stopping_thres", "fs", 0.05, _M, "convergence threshold of the latency"),
    _k("acc_stopping_thres", "fs", 0.05, _M, "convergence threshold of the accepted rate"),
    _k("sim_count", "i", 1, _R, "one simulation"),
    _k("include_queuing", "i", 1, _R, "latency includes source queueing"),
    _k("seed", "is", 0, _M, "seed (mpinet's keyed draws: not BookSim's random sequence)"),
    _k("print_activity", "i", 0, _R, "BookSim's debugging output"),
    _k("print_csv_results", "i", 0, _R, "use --json"),
    _k("deadlock_warn_timeout", "i", 256, _D, "mpinet finds a deadlock exactly (a wait-for "
       "cycle) and stops the run there; no timeout warnings"),
    _k("viewer_trace", "i", 0, _R, "BookSim's debugging output"),
    *(_k(f"watch_{w}", "s", "", _R, "BookSim's debugging output")
      for w in ("file", "flits", "packets", "transactions", "out")),
    _k("stats_out", "s", "", _R, "use --json"),
    _k("sent_packets_out", "s", "", _R, "BookSim's debugging output"),
    _k("sim_power", "i", 0, _R, "power model"),
    _k("power_output_file", "s", "pwr_tmp", _R, "power model"),
    _k("tech_file", "s", "", _R, "power model"),
    _k("channel_width", "i", 128, _R, "power model"),
    _k("channel_sweep", "i", 0, _R, "power model"),
    _k("network_file", "s", "", _M, "the anynet file: topology file:anynet:PATH (PATH as "
       "BookSim opens it, from the working directory; one terminal per router, numbered as "
       "the router)"),
)}  # fmt: skip


def markdown() -> str:
    """docs/booksim.md's key table (between its markers), from :data:`KEYS`."""
    words = {_M: "modeled", _D: "accepted, treated differently", _Q: "iq router",
             _R: "refused unless default"}  # fmt: skip
    rows = ["| key | default | mpinet | how |", "|---|---|---|---|"]
    for k in KEYS.values():
        d = k.default if not isinstance(k.default, str) else (k.default or '""')
        rows.append(f"| `{k.name}` | {d} | {words[k.what]} | {k.note} |")
    return "\n".join(rows)
