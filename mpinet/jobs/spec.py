"""Job files: TOML (or flags and ``--set``) -> a validated :class:`Job`.

What a job may say, key by key, is :mod:`mpinet.jobs.schema` (:data:`SCHEMA`, the
:data:`RULES` of its numbers); its names are importable from here too. Here the raw
sections are checked against it (:func:`validate`), ``--set`` values merged into them
(:func:`parse_set`, :func:`merge`) and job files read (:func:`load_job`).
"""

from __future__ import annotations

import copy
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpinet.engine.iq_config import check_iq, check_router
from mpinet.errors import JobError
from mpinet.jobs.inputs import read_input
from mpinet.jobs.schema import BOUNDS, REQUIRED, RULES, SCHEMA, SHORTHAND
from mpinet.topology.file_spec import split_file_spec
from mpinet.values import arg

# the schema's names stay importable from here (commands, scripts, tests)
__all__ = [
    "BOUNDS",
    "REQUIRED",
    "RULES",
    "SCHEMA",
    "SHORTHAND",
    "Job",
    "JobError",
    "check_section",
    "check_value",
    "key_arg",
    "load_job",
    "merge",
    "parse_set",
    "read_job_text",
    "validate",
]


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


def _int_list(where: str, value: Any, lo: int, hi: int, what: str, one: bool = False) -> Any:
    """A non-empty list of integers in [lo, hi] (``one``: or a single such integer)."""
    if one and not isinstance(value, list):
        value, single = [value], True
    else:
        single = False
    if not isinstance(value, list) or not value:
        raise JobError(f"{where} must be a non-empty list of {what}, got {value!r}")
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            at = where if single else f"{where}[{i}]"
            raise JobError(f"{at} must be an integer in [{lo:,}, {hi:,}] ({what}), got {v!r}")
    return value[0] if single else value


def _hotspot_nodes(where: str, value: Any) -> list:
    if not isinstance(value, list) or not value:
        raise JobError(
            f"{where} must be a non-empty list of node ids or labels, e.g. [0, 5], got {value!r}"
        )
    return [_label(f"{where}[{i}]", v) for i, v in enumerate(value)]


#: keys whose values are lists or tables with their own rules
_SHAPED = {
    "model.router": check_router,
    "model.iq": check_iq,
    "workload.locality": _locality,
    "workload.hotspot_nodes": _hotspot_nodes,
    "workload.hotspot_rates": lambda w, v: _int_list(w, v, 1, 2**31 - 1, "relative weights"),
    "workload.burst_initial": lambda w, v: _int_list(w, v, 0, 1, "1 on, 0 off", one=True),
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
    fmt, path = split_file_spec(spec.strip()[5:])
    if path and not os.path.isabs(path):
        raw["topology"] = f"file:{fmt}{os.path.normpath(os.path.join(str(base), path))}"


def read_job_text(path: str | Path) -> str:
    """The text of a job file, or a :class:`JobError` saying in one line why not.

    At most :data:`~mpinet.jobs.inputs.JOB_FILE_BYTES` (1 MiB) are read, and a FIFO, pipe
    or device must give its content within seconds (:func:`~mpinet.jobs.inputs.read_input`).
    """
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
