"""A BookSim2 configuration as an mpinet job: the keys of :data:`~mpinet.jobs.booksim_keys.KEYS`
resolved, checked and mapped (:func:`to_job`), every refusal one line naming the key.
"""

from __future__ import annotations

import difflib
import os
from typing import Any

from mpinet.engine.iq_config import ALLOCATORS, FLOAT_KEYS, INT_KEYS, STR_KEYS, check_iq
from mpinet.errors import JobError
from mpinet.jobs.booksim_config import Assignment, Config, ConfigError, clip_text, split_list
from mpinet.jobs.booksim_keys import KEYS
from mpinet.jobs.booksim_measure import Measure
from mpinet.jobs.inputs import read_input
from mpinet.workloads.registry import WORKLOADS

#: BookSim's routing function per topology -> mpinet's router
ROUTING = {
    "mesh": {"dor": "dor", "dim_order": "dor"},
    "torus": {"dim_order": "dor"},
    "anynet": {"min": "anynet-min"},
}
#: mpinet patterns whose name BookSim uses for another pattern (never taken as BookSim's)
_CLASH = {"uniform", "transpose", "hotspot", "permutation"}
#: BookSim's keys the iq router models (``[model.iq]``; ``channel_latency`` is mpinet's;
#: ``alloc_iters`` never reaches BookSim's iq router's allocators: see its row in KEYS)
IQ_KEYS = tuple(k for k in (*INT_KEYS, *STR_KEYS, *FLOAT_KEYS)
                if k not in ("channel_latency", "alloc_iters"))  # fmt: skip
#: the router value that runs mpinet's ideal router (an mpinet extension of BookSim's keys)
IDEAL = "ideal"


def _value(a: Assignment) -> Any:
    """``a``'s value as its key takes it (BookSim's slots), or a :class:`ConfigError`."""
    key = KEYS.get(a.key)
    if key is None:
        near = difflib.get_close_matches(a.key, KEYS, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(f"{a.where}: unknown key {clip_text(a.key)!r}{hint}: BookSim2 has none")
    num = "i" if "i" in key.slots else "f" if "f" in key.slots else ""
    if a.kind == "str":
        if "s" not in key.slots:
            raise ConfigError(f"{a.where}: {a.key} takes a number, got {clip_text(str(a.value))!r}")
        if not num:
            return a.value
        items = split_list(a.value)
        if len(items) != 1:
            raise ConfigError(
                f"{a.where}: {a.key} = {clip_text(a.value)}: one value per traffic class; mpinet "
                "booksim runs one class, so give one value"
            )
        if items[0] == "time" and a.key.endswith("seed"):  # BookSim's clock seed
            raise ConfigError(f"{a.where}: {a.key} = time: mpinet booksim takes a seed >= 0 "
                              "(the same runs every time, on any rank count)")  # fmt: skip
        try:
            return int(items[0]) if num == "i" else float(items[0])
        except ValueError:
            what = "an integer" if num == "i" else "a number"
            raise ConfigError(
                f"{a.where}: {a.key} takes {what}, got {clip_text(a.value)!r}"
            ) from None
    if not num:
        raise ConfigError(f"{a.where}: {a.key} takes a name, got {a.value}")
    if num == "i" and a.kind == "real":
        raise ConfigError(f"{a.where}: {a.key} takes an integer, got {a.value!r}")
    return float(a.value) if num == "f" else a.value


def settings(cfg: Config) -> tuple[dict[str, Any], dict[str, str]]:
    """Every key's value (given or default) and where each given one was set."""
    vals = {k.name: k.default for k in KEYS.values()}
    where: dict[str, str] = {}
    for a in cfg.assignments:
        vals[a.key] = _value(a)
        where[a.key] = a.where
    return vals, where


def to_job(cfg: Config) -> tuple[dict, Measure, dict]:
    """The job (raw, for :func:`mpinet.jobs.spec.validate`), the measurement and a summary.

    Raises
    ------
    ConfigError
        A key refused by name (a non-default value of a ``refuse`` key, ``router = iq``,
        a topology, routing function, traffic or injection process mpinet does not run,
        a value out of range).
    """
    v, where = settings(cfg)

    def bad(key: str, why: str) -> ConfigError:
        at, dflt = where.get(key, cfg.path), "" if key in where else " (BookSim's default)"
        shown = clip_text(str(v[key])) if v[key] != "" else '""'
        return ConfigError(f"{at}: {key} = {shown}{dflt}: {why}")

    if v["topology"] not in ROUTING:  # first: the network decides what else could run
        raise bad("topology", "mpinet booksim runs mesh, torus and anynet")
    for name in where:
        k = KEYS[name]
        if k.what == "refuse" and v[name] != k.default:
            raise bad(name, f"not modeled by mpinet booksim ({k.note}); remove it")
    iq_router = v["router"] == "iq"
    if not iq_router and v["router"] != IDEAL:
        raise bad("router", f"mpinet booksim runs router = iq (BookSim's input-queued router) "
                  f"or {IDEAL} (mpinet's ideal router)")  # fmt: skip
    if iq_router:
        for name in where:
            k = KEYS[name]
            if k.what == "iq" and name not in IQ_KEYS and v[name] != k.default:
                raise bad(name, f"not modeled by mpinet's iq router ({k.note}); remove it")
    topo = v["topology"]
    spec = _topology(v, bad)
    rf = ROUTING[topo].get(v["routing_function"])
    if rf is None:
        names = " or ".join(ROUTING[topo])
        raise bad("routing_function", f"mpinet booksim runs {names} on {topo}")
    kind, hot = _traffic(v, bad)
    if v["injection_process"] not in ("bernoulli", "on_off"):
        raise bad("injection_process", "mpinet booksim runs bernoulli and on_off")
    size = v["packet_size"]
    if not 1 <= size <= 1 << 16:
        raise bad("packet_size", "must be in [1, 65536] flits")
    rate = v["injection_rate"] / (size if v["injection_rate_uses_flits"] else 1)
    if not 0.0 < rate <= 1.0:
        raise bad("injection_rate", f"{rate:g} packets per node per step must be in (0, 1]")
    for key, lo, hi in (("num_vcs", 1, 64), ("vc_buf_size", 1, 1 << 16), ("vct", 0, 1),
                        ("injection_rate_uses_flits", 0, 1)):  # fmt: skip
        if not lo <= v[key] <= hi:
            raise bad(key, f"must be in [{lo}, {hi}]")
    if v["seed"] < 0:
        raise bad("seed", "mpinet booksim takes a seed >= 0")
    m = _measure(v, bad)
    policy = "dateline-turn" if topo == "torus" else "any"  # BookSim's torus VC classes
    raw = {
        "topology": spec,
        "seed": int(v["seed"]),
        "workload": {
            "kind": kind,
            "injection": v["injection_process"],
            "rate": float(v["injection_rate"]),
            "rate_uses_flits": int(v["injection_rate_uses_flits"]),
        },
        "router": {"name": rf},
        "model": {
            "kind": "all-port",
            "switching": "cut-through" if v["vct"] else "wormhole",
            "flits": int(size),
            "vcs": int(v["num_vcs"]),
            "vc_buffer": int(v["vc_buf_size"]),
            "vc_policy": policy,
        },  # fmt: skip
        "trace": {"level": "none"},
    }
    raw["workload"].update(hot)  # hotspot's lists (BookSim's pattern parameters)
    if iq_router:
        raw["model"]["router"] = "iq"
        raw["model"]["iq"] = _iq_keys(v, topo, bad)
    if v["injection_process"] == "on_off":
        raw["workload"].update({k: v[k] for k in ("burst_alpha", "burst_beta", "burst_r1")})
    iq = {} if iq_router else {k: v[k] for k in where if KEYS[k].what == "iq"}
    diff = {k: KEYS[k].note for k in where if KEYS[k].what == "diff"}
    info = {"topology": spec, "router": rf, "traffic": kind, "rate": rate, "flits": int(size),
            "vcs": int(v["num_vcs"]), "vc_buffer": int(v["vc_buf_size"]), "vc_policy": policy,
            "switching": raw["model"]["switching"], "seed": int(v["seed"]),
            "not_modeled_by_ideal_router": iq, "treated_differently": diff,
            "router_model": "iq" if iq_router else IDEAL}  # fmt: skip
    if iq_router:
        info["iq"] = dict(raw["model"]["iq"])
    return raw, m, info


def _iq_keys(v: dict, topo: str, bad: Any) -> dict:
    """``[model.iq]`` of a configuration with ``router = iq``: BookSim's keys of the model,
    and the channel latency BookSim gives the topology (``use_noc_latency = 1``: 2 on a
    torus, else 1; anynet channels 1)."""
    out = {k: v[k] for k in IQ_KEYS if k in v}
    noc = v["use_noc_latency"]
    out["channel_latency"] = 2 if topo == "torus" and noc else 1
    for k in ("vc_allocator", "sw_allocator"):
        if out[k] not in ALLOCATORS:
            why = "BookSim's maximum-size matching is not modeled" if out[k] == "max_size" else (
                "not modeled")  # fmt: skip
            raise bad(k, f"{why}; mpinet's iq router runs {', '.join(ALLOCATORS)}")
    try:
        return check_iq("model.iq", out)
    except JobError as exc:
        key = str(exc).split(" ", 1)[0].removeprefix("model.iq.")
        raise bad(key if key in v else "st_final_delay", str(exc)) from None


def _topology(v: dict, bad: Any) -> str:
    topo = v["topology"]
    if topo == "anynet":
        path = v["network_file"]
        if not path:
            raise bad("network_file", "topology = anynet needs network_file")
        _one_terminal_each(path, bad)
        return f"file:anynet:{os.path.abspath(path)}"
    k, n = v["k"], v["n"]
    if k < 2:
        raise bad("k", "must be >= 2")
    if n < 1:
        raise bad("n", "must be >= 1")
    return f"{topo}:{k},{n}"


def _one_terminal_each(path: str, bad: Any) -> None:
    """Refuse an anynet file whose routers do not each hold one terminal of their own id.

    mpinet's anynet reader makes router R node R (docs/networks.md), whatever terminals
    it lists; BookSim's traffic goes between the terminals. They are the same network only
    with one terminal per router, numbered as its router. (A missing or unreadable file is
    left to the network reader, which names it.)
    """
    if not os.path.isfile(path):
        return
    text = read_input(path, "anynet network file", 1 << 26, hint="the network file").decode(
        "utf-8", "replace"
    )
    routers: dict[str, set[str]] = {}
    for line in text.splitlines():
        tok = line.split()
        if len(tok) < 2:
            continue
        head, i = (tok[0], tok[1]), 2
        routers.setdefault(tok[1], set()) if tok[0] == "router" else None
        while i + 1 < len(tok):
            body = (tok[i], tok[i + 1])
            i += 3 if i + 2 < len(tok) and tok[i + 2].isdigit() else 2
            if body[0] == "router":
                routers.setdefault(body[1], set())
            pair = {head[0]: head[1], body[0]: body[1]}
            if set(pair) == {"router", "node"}:
                routers.setdefault(pair["router"], set()).add(pair["node"])
    for r, terms in routers.items():
        if terms != {r}:
            got = ", ".join(sorted(terms, key=lambda t: (len(t), t))[:4]) or "none"
            raise bad("network_file", f"router {r} has terminals {got}: mpinet runs anynet "
                      "files with one terminal per router, numbered as the router "
                      "(as mpinet export writes them)")  # fmt: skip


def _traffic(v: dict, bad: Any) -> tuple[str, dict]:
    """BookSim's pattern as an mpinet workload kind (the registered one), and the workload
    keys of its parameters (``hotspot({{h0,h1},{r0,r1}})``: read as traffic.cpp reads them)."""
    name = v["traffic"]
    base = name.split("(")[0]
    if base != name:
        if base != "hotspot":
            raise bad("traffic", "patterns with parameters are not run by mpinet booksim yet "
                      "(hotspot's lists are)")  # fmt: skip
        return "booksim-hotspot", _hotspot_params(name, bad)
    cands = [f"booksim-{name}"] + ([] if name in _CLASH else [name])
    for c in cands:
        if c in WORKLOADS:
            return c, ({"hotspot_nodes": [-1]} if c == "booksim-hotspot" else {})
    raise bad("traffic", "mpinet has no such pattern yet")


def _hotspot_params(name: str, bad: Any) -> dict:
    """``hotspot(P)``: P is BookSim's list of parameters, the first the hotspots (one id or
    ``{h0,h1,...}``), the second their integer rates (``hotspot({{0,5},{3,1}})``; a
    parameter list not in braces is one parameter, as ``tokenize_str`` reads it)."""
    inner = name[name.index("(") + 1 :]
    inner = inner[: inner.rindex(")")] if ")" in inner else inner
    params = split_list(inner)
    if not params or len(params) > 2:
        raise bad("traffic", "hotspot takes its hotspots and at most their rates: "
                  "hotspot({{h0,h1,...},{r0,r1,...}}) or hotspot(h)")  # fmt: skip
    lists = []
    for what, text in zip(("hotspot", "rate"), params, strict=False):
        try:
            lists.append([int(x) for x in split_list(text)])
        except ValueError:
            raise bad(
                "traffic", f"hotspot's {what}s must be integers, got {clip_text(text)!r}"
            ) from None
    out = {"hotspot_nodes": lists[0]}
    if len(lists) > 1:
        nodes, rates = lists
        if len(rates) > len(nodes) or not rates or min(rates) < 1:
            raise bad("traffic", f"{len(rates)} rate(s) for {len(nodes)} hotspot(s): give each "
                      "hotspot an integer rate >= 1, at most one per hotspot (a shorter list "
                      "repeats its last)")  # fmt: skip
        out["hotspot_rates"] = rates
    return out


def _measure(v: dict, bad: Any) -> Measure:
    if v["sim_type"] not in ("latency", "throughput"):
        raise bad("sim_type", "mpinet booksim runs latency or throughput")
    for key, lo, hi in (("sample_period", 1, 1 << 24), ("max_samples", 1, 1 << 12),
                        ("warmup_periods", 0, 1 << 12)):  # fmt: skip
        if not lo <= v[key] <= hi:
            raise bad(key, f"must be in [{lo}, {hi}]")
    steps = (v["max_samples"] + 1) * v["sample_period"]
    if steps > 1 << 28:
        raise bad("max_samples", f"(max_samples + 1) x sample_period = {steps:,} steps, over "
                  f"{1 << 28:,}")  # fmt: skip
    return Measure(v["sim_type"], v["warmup_periods"], v["sample_period"], v["max_samples"],
                   v["latency_thres"], v["warmup_thres"], v["acc_warmup_thres"],
                   v["stopping_thres"], v["acc_stopping_thres"])  # fmt: skip
