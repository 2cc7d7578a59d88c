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

import copy
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpinet.engine.flit.iq_config import check_iq, check_router
from mpinet.errors import JobError
from mpinet.values import Range, arg, prob_range

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
            "the VC of each hop: any (default) | hops | negative-hop | dateline",
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


def key_arg(key: str) -> Callable[[str], Any]:
    """The argparse ``type=`` of a flag that sets the job key ``key``: its :data:`RULES`
    range, and a message naming the key (``argument --rate: workload.rate must be ...``)."""
    return arg(RULES[key], key)


@dataclass
class Job:
    """A validated job: plain dicts per section, defaults filled in."""

    topology: str
    seed: int
    max_steps: int
    workload: dict
    router: dict
    model: dict
    trace: dict
    faults: dict
    source: str = "<flags>"
    #: the keys the job file or the flags set (``"workload.rate"``), defaults excluded
    given: frozenset[str] = frozenset()

    def as_dict(self) -> dict:
        return {
            "topology": self.topology,
            "seed": self.seed,
            "max_steps": self.max_steps,
            "workload": self.workload,
            "router": self.router,
            "model": self.model,
            "faults": self.faults,
            "trace": self.trace,
        }


def _check(where: str, value: Any, types: tuple) -> Any:
    if isinstance(value, bool) or not isinstance(value, types):
        names = " or ".join(t.__name__ for t in types)
        raise JobError(f"{where} must be {names}, got {value!r}")
    return value


def _label(where: str, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise JobError(
            f'{where} must be a node label (a string such as "1234" or "#5"), got {value!r}'
        )
    return value


def _locality(where: str, value: Any) -> Any:
    rule = RULES["workload.locality"]
    if isinstance(value, list):
        if not value:
            raise JobError(
                f"{where} must be a probability or a list [p_2, ..., p_m] of them, got []"
            )
        return [rule.check(f"{where}[{i}]", v, error=JobError) for i, v in enumerate(value)]
    if isinstance(value, str):
        raise JobError(
            f"{where} must be a probability in [0, 1] or a list [p_2, ..., p_m] of them, "
            f"got {value!r}"
        )
    return rule.check(where, value, error=JobError)


def _capacity(where: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise JobError(
            f"{where} must be a table of port class = packets per step, e.g. {{ local = 2 }}, "
            f"got {value!r}"
        )
    rule = RULES["model.capacity"]
    return {
        k: rule.check(f"{where} of port class {k!r}", v, error=JobError) for k, v in value.items()
    }


def _nodes(where: str, value: Any) -> list:
    if not isinstance(value, list):
        raise JobError(f'{where} must be a list of node labels, e.g. ["1234"], got {value!r}')
    return [_label(f"{where}[{i}]", v) for i, v in enumerate(value)]


def _links(where: str, value: Any) -> list:
    if not isinstance(value, list):
        raise JobError(
            f'{where} must be a list of pairs of neighbour labels, e.g. [["1234", "2134"]], '
            f"got {value!r}"
        )
    for pair in value:
        if not isinstance(pair, list) or len(pair) != 2:
            raise JobError(f"{where} takes pairs of node labels, e.g. [['a', 'b']]; got {pair!r}")
        for x in pair:
            _label(f"{where} pair {pair!r}: each", x)
    return value


#: keys whose values are lists or tables with their own rules
_SHAPED = {
    "model.router": check_router,
    "model.iq": check_iq,
    "workload.locality": _locality,
    "model.capacity": _capacity,
    "faults.nodes": _nodes,
    "faults.links": _links,
}


def check_value(source: str, key: str, value: Any) -> Any:
    """One key's value: its type and, for a number, its :data:`RULES` range.

    Raises
    ------
    JobError
        ``job.toml: workload.rate must be in (0, 1] (a probability), got nan``.
    """
    where = f"{source}: {key}"
    if key in _SHAPED:
        return _SHAPED[key](where, value)
    if key in RULES:
        return RULES[key].check(where, value, error=JobError)
    sec, _, k = key.rpartition(".")
    return _check(where, value, (SCHEMA[sec][k] if sec else SCHEMA[key])[0])


def check_section(source: str, key: str, value: Any) -> tuple[dict, set[str]]:
    """A section (``[faults]``): every key checked, defaults filled; and the keys given."""
    spec = SCHEMA[key]
    if isinstance(value, str) and key in SHORTHAND:
        value = {SHORTHAND[key]: value}
    value = {} if value is None else value
    if not isinstance(value, dict):
        short = f" or a {SHORTHAND[key]} (a string)" if key in SHORTHAND else ""
        raise JobError(f"{source}: [{key}] must be a table{short}, got {value!r}")
    for k in value:
        if k not in spec:
            valid = ", ".join(spec)
            raise JobError(f"{source}: unknown key {key}.{k!r}; valid keys in [{key}]: {valid}")
    sec = {
        k: check_value(source, f"{key}.{k}", value[k]) if k in value else copy.deepcopy(default)
        for k, (_, default, _) in spec.items()
    }
    return sec, {f"{key}.{k}" for k in value}


def validate(raw: dict, source: str = "<flags>") -> Job:
    """Fill defaults and check every key of a raw job dict."""
    out: dict[str, Any] = {}
    given: set[str] = set()
    for key in raw:
        if key not in SCHEMA:
            raise JobError(f"{source}: unknown key {key!r}; valid keys: {', '.join(SCHEMA)}")
    for key, spec in SCHEMA.items():
        value = raw.get(key)
        if isinstance(spec, dict):
            out[key], keys = check_section(source, key, value)
            given |= keys
        elif value is None:
            if spec[1] is REQUIRED:
                raise JobError(f'{source}: the key {key!r} is required (e.g. {key} = "scc:5")')
            out[key] = spec[1]
        else:
            given.add(key)
            out[key] = check_value(source, key, value)
    if out["trace"]["level"] not in ("none", "summary", "hops"):
        raise JobError(f"{source}: trace.level must be none, summary or hops")
    return Job(**out, source=source, given=frozenset(given))


def parse_set(
    item: str, flag: str = "--set", example: str = "workload.packets=8"
) -> tuple[list[str], Any]:
    """``section.key=value`` -> (path, value); the value is read as TOML, else as a string.

    ``flag`` and ``example`` name the option in the message (``--option`` reuses this).
    """
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise JobError(f"{flag} takes KEY=VALUE (e.g. {example}), got {item!r}")
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text
    return [p.strip() for p in key.split(".")], value


def merge(raw: dict, path: list[str], value: Any) -> None:
    """Set ``raw[path[0]][path[1]]... = value``, expanding shorthand sections.

    A whole section given as its shorthand (``--set workload=uniform``: the
    kind) or as a table (``--set 'model={kind="sdc"}'``) is merged into what
    the job or an earlier ``--set`` gave it: the keys it does not name stay
    (``--set workload.packets=2 --set workload=uniform`` keeps the 2).
    """
    node = raw
    for i, part in enumerate(path[:-1]):
        nxt = node.get(part)
        if isinstance(nxt, str) and part in SHORTHAND and i == 0:
            nxt = {SHORTHAND[part]: nxt}
        if nxt is None:
            nxt = {}
        if not isinstance(nxt, dict):
            raise JobError(f"cannot set {'.'.join(path)}: {part} is not a table")
        node[part] = nxt
        node = nxt
    last = path[-1]
    old = node.get(last)
    if len(path) == 1 and isinstance(SCHEMA.get(last), dict) and old is not None:
        if isinstance(old, str) and last in SHORTHAND:
            old = {SHORTHAND[last]: old}
        if isinstance(old, dict) and isinstance(value, str) and last in SHORTHAND:
            value = {SHORTHAND[last]: value}
        if isinstance(old, dict) and isinstance(value, dict):
            node[last] = {**old, **value}
            return
    node[last] = value


def load_job(path: str | None, sets: list[tuple[list[str], Any]] = ()) -> Job:
    """Read a TOML job (or start empty), apply ``--set`` overrides, validate."""
    raw: dict = {}
    source = "<flags>"
    if path is not None:
        source = str(path)
        raw = _parse_toml(path, read_job_text(path))
        _anchor_network_file(raw, Path(path).parent)
    for keys, value in sets:
        merge(raw, keys, value)
    return validate(raw, source)


def _anchor_network_file(raw: dict, base: Path) -> None:
    """A job file's ``file:PATH`` topology names a path relative to the job file."""
    spec = raw.get("topology")
    if not isinstance(spec, str) or not spec.strip().lower().startswith("file:"):
        return
    from mpinet.netfile import FORMATS

    head, sep, rest = spec.strip()[5:].partition(":")
    fmt, path = (head + sep, rest) if sep and head.lower() in FORMATS else ("", spec.strip()[5:])
    if path and not os.path.isabs(path):
        raw["topology"] = f"file:{fmt}{os.path.normpath(os.path.join(str(base), path))}"


def read_job_text(path: str | Path) -> str:
    """The text of a job file, or a :class:`JobError` saying in one line why not.

    At most :data:`~mpinet.jobs.inputs.JOB_FILE_BYTES` (1 MiB) are read, and a FIFO, pipe
    or device must give its content within seconds (:func:`~mpinet.jobs.inputs.read_input`).
    """
    from mpinet.jobs.inputs import read_input

    data = read_input(path, "job file")
    if b"\0" in data:
        raise JobError(f"job file {path} is binary, not a TOML text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JobError(
            f"job file {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); TOML files are UTF-8"
        ) from None


def _parse_toml(path: str | Path, text: str) -> dict:
    """Parse a job file's text; a TOML syntax error becomes a one-line :class:`JobError`."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise JobError(f"job file {path} is not valid TOML: {exc}") from None
