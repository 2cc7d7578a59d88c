"""Refused before any work, proved by memory: plan refusals in a 1 GiB address space.

A refusal answered within the catalogue's time limit says nothing about what was allocated
before it. These cases run the commands whose plans refuse work of many GiB under
:data:`catalogue.BEFORE_WORK` (1 GiB of address space per process, about what the
interpreter, numpy, numba and MPI take to start): an allocation of any size made before the
refusal would end them with a ``MemoryError`` traceback or another exit code (the plans
count the cap, so their lines name it; the proof is the allocation that never came). Each also
checks that the plan's own figure is far above the cap (:data:`FAR`), so the cap proves
something: the work really could not have started in it.
"""

from __future__ import annotations

import re

import pytest
from catalogue import BEFORE_WORK, Case, param, run_and_check, section

#: how far above the cap the refused work's memory must be (the start-up leaves about 0.6 GiB
#: of the cap: 4 GiB is many times that headroom)
FAR = 4
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
NEEDS = re.compile(r"needs about ([\d.,]+) (KiB|MiB|GiB|TiB) (?:per rank|on rank 0)")


def C(cid: str, cmd: str, match: str, **kw) -> Case:
    return Case(cid, cmd, match, cap=BEFORE_WORK, **kw)


def needs(line: str) -> int:
    """The memory the plan says the refused work needs (per rank, or on rank 0), bytes."""
    m = NEEDS.search(line)
    assert m, f"the refusal names no memory need: {line}"
    return int(float(m.group(1).replace(",", "")) * UNITS[m.group(2)])


CASES: list[Case] = [
    *section(
        "Refused before any work, in 1 GiB of address space",
        C(
            "cap-info-star14",
            "info star:14",
            r"BFS on star:14 \(87,178,291,200 nodes, degree 13\) needs about .* per rank",
        ),
        C(
            "cap-info-star14-mpi",
            "info star:14",
            r"BFS on star:14 \(87,178,291,200 nodes, degree 13\) needs about .* per rank",
            ranks=2,
        ),
        C(
            "cap-run-hypercube26",
            "run --topology hypercube:26 --router hypercube-ecube",
            r"run on hypercube:26 \(67,108,864 nodes, degree 26\) needs about .* per rank",
        ),
        C(
            "cap-run-hypercube26-mpi",
            "run --topology hypercube:26 --router hypercube-ecube",
            r"run on hypercube:26 \(67,108,864 nodes, degree 26\) needs about .* per rank",
            ranks=2,
        ),
        C(
            "cap-run-scc6-200k-packets",
            "run --topology scc:6 --packets 200000",
            r"run on scc:6 \(3,600 nodes, degree 3\) needs about .* per rank \(packet records",
        ),
        C(
            "cap-deadlock-ms33-memory",
            "deadlock ms:3,3 --router shortest",
            r"deadlock analysis of shortest on ms:3,3 .* needs about .* on rank 0 "
            r"\(dependency graph",
        ),
        C(
            "cap-sweep-ms43",
            "sweep --topology ms:4,3 --rates 0.1,0.9",
            r"run on ms:4,3 \(6,227,020,800 nodes, degree 6\) needs about .* per rank",
        ),
        C(
            "cap-sweep-measure-memory",
            "sweep --topology star:6 --rates 0.5 --measure 200000",
            r"sweep on star:6 \(720 nodes, degree 5\) at load 0\.5 needs about .* per rank",
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("cap-") for i in ids)
    assert all(c.cap == BEFORE_WORK and c.code == 2 for c in CASES)
    assert sum(c.ranks > 1 for c in CASES) >= 2


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_refused_before_any_work(c: Case, tmp_path, request):
    o = run_and_check(c, tmp_path, request)
    need = needs(o.lines[0])
    assert need >= FAR * c.cap, f"{c.id}: the refused work needs {need:,} bytes, cap {c.cap:,}"
