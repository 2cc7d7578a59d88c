"""The catalogue of collective checks behind ``mpinet verify``.

A :class:`Check` names a network, a collective and a model, builds the node
program, and carries the paper's step count (if the paper gives one) and the
exact lower bound that holds for the model. ``mpinet verify`` runs each on the
engine and gives a verdict from the *measured* steps:

* ``equal``: measured == paper formula (and >= the lower bound);
* ``better-than-paper``: measured < paper formula (>= the lower bound);
* ``within-bound``: no paper formula, measured >= the lower bound;
* ``paper-wrong``: the paper's formula is below the exact lower bound, so no
  algorithm can meet it (the check then passes if measured >= the bound);
* ``FAIL``: incomplete, or measured worse than the paper, or below the lower
  bound (which would mean the engine or the bound is wrong).

Each collective module lists its checks in ``CHECKS``;
:func:`mpinet.workloads.catalogue.all_checks` gathers them (each imports this module).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mpinet.topology import from_spec
from mpinet.topology.base import Topology


@dataclass(frozen=True)
class Check:
    """One collective on one network under one model."""

    topology: str
    collective: str
    model: str
    build: Callable[[Topology], Any]  # -> a NodeProgram (or a runner, see ``run``)
    lower_bound: Callable[[Topology], int]
    paper_steps: Callable[[Topology], int] | None = None
    paper_source: str = ""
    quick: bool = True
    #: custom runner ``(topo, model, comm) -> CollectiveResult`` (e.g. TE on the unicast engine)
    run: Callable[..., Any] | None = None
    #: extra measured quantities for the report, ``(topo, result) -> dict`` (e.g. Thm 6's time)
    report: Callable[[Topology, Any], dict] | None = None


def verdict(measured: int, complete: bool, paper: int | None, lower: int) -> str:
    """The verdict of one check (see the module docstring)."""
    if not complete or measured < lower:
        return "FAIL"
    if paper is None:
        return "within-bound"
    if paper < lower:
        return "paper-wrong"
    if measured == paper:
        return "equal"
    return "better-than-paper" if measured < paper else "FAIL"


def log2_bound(topo: Topology) -> int:
    """One-port broadcast lower bound: informed nodes at most double per step."""
    return math.ceil(math.log2(topo.num_nodes))


def topology_of(check: Check) -> Topology:
    return from_spec(check.topology)
