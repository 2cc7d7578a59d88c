"""The third plans catalogue: plans that count VCs, BFS depth and every memory limit.

Flit runs whose VC buffers would not fit (many VCs, a small ``MPINET_MEMORY_LIMIT``, the
catalogue's capped address space, or the flit engine's int32 buffer ids), ``info`` on
networks as deep as they are long (paths, rings, grids read from files: the depth is
sampled, the refusal states it with the hours and the sources that fit), and star:13 or
cayley:13, which used to pass the plan and die of a MemoryError under ``ulimit -v``: each
is refused in one line (exit code 2) naming the limit that binds, on 1 and 2 ranks, before
anything sizeable is allocated (:mod:`catalogue`; every process runs under its
:data:`~catalogue.CAP`, or the smaller ``cap`` a case states).
"""

from __future__ import annotations

import pytest
from catalogue import BEFORE_WORK, STRICT_JSON, Case, Given, param, run_and_check, section

#: light uniform wormhole traffic on e-cube (the measured table in docs/reliability.md)
FLIT = (
    "run --router hypercube-ecube --workload uniform --injection bernoulli --rate 0.005 "
    "--steps 50 --set model.switching=wormhole --set model.flits=16 --set model.vc_buffer=4 "
    "--quiet --topology"
)
ULIMIT = r"but only [\d.]+ [GM]iB is available per process \(ulimit -v [\d.]+ GiB\)"
CAYLEY13 = "'cayley:13:" + ",".join(f"(1,{k})" for k in range(2, 14)) + "'"


def edges(pairs, what: str) -> Given:
    return Given("".join(f"{a} {b}\n" for a, b in pairs), what)


PATH_100K = {"path.edges": edges(((i, i + 1) for i in range(99_999)), "a path of 100,000 nodes")}
PATH_20K = {"path.edges": edges(((i, i + 1) for i in range(19_999)), "a path of 20,000 nodes")}
RING_200K = {
    "ring.edges": edges(((i, (i + 1) % 200_000) for i in range(200_000)), "a ring of 200,000")
}
GRID = {
    "grid.edges": edges(
        [(r * 300 + c, r * 300 + c + 1) for r in range(300) for c in range(299)]
        + [(r * 300 + c, (r + 1) * 300 + c) for r in range(299) for c in range(300)],
        "a 300 x 300 grid",
    )
}
DEEP = r"not vertex-transitive, depth about [\d,]+ by 4 sampled BFS, is about [\d.e+]+ word"

C = Case
CASES: list[Case] = [
    *section(
        "Plans 3: flit runs counted by VCs, flits and buffers",
        C(
            "plan3-flit-h18-vcs64",
            f"{FLIT} hypercube:18 --set model.vcs=64",
            r"run on hypercube:18 \(262,144 nodes, degree 18\) needs about [\d.]+ GiB per rank "
            rf"\(VC buffers .*\), {ULIMIT}; way out: \d+ or more ranks, or a larger ulimit -v, "
            r"or a smaller network",
            cap=BEFORE_WORK,
        ),
        C(
            "plan3-flit-h18-vcs64-mpi",
            f"{FLIT} hypercube:18 --set model.vcs=64",
            r"run on hypercube:18 .* needs about [\d.]+ GiB per rank \(VC buffers .*\), [\d.]+ GiB "
            rf"for the 2 rank\(s\) on this machine, {ULIMIT}",
            ranks=2,
        ),
        C(
            "plan3-flit-h16-vcs32-limit",
            f"{FLIT} hypercube:16 --set model.vcs=32",
            r"run on hypercube:16 .* needs about [\d.]+ GiB per rank \(VC buffers .*\), .* but "
            r"1\.0 GiB is available \(MPINET_MEMORY_LIMIT\); way out: \d+ or more ranks .*, or "
            r"fewer VCs \(model\.vcs <= \d+ fits\), or a smaller network",
            env={"MPINET_MEMORY_LIMIT": "1G"},
        ),
        C(
            "plan3-flit-h14-vcs64-limit",
            f"{FLIT} hypercube:14 --set model.vcs=64",
            r"run on hypercube:14 .* \(VC buffers .*\), .* but 512\.0 MiB is available "
            r"\(MPINET_MEMORY_LIMIT\); way out: .*fewer VCs \(model\.vcs <= \d+ fits\)",
            env={"MPINET_MEMORY_LIMIT": "512M"},
        ),
        C(
            "plan3-flit-h14-vcs64-limit-mpi",
            f"{FLIT} hypercube:14 --set model.vcs=64",
            r"run on hypercube:14 .* for the 2 rank\(s\) on this machine, but 1\.0 GiB is "
            r"available \(MPINET_MEMORY_LIMIT\); way out: .*fewer VCs \(model\.vcs <= \d+ fits\)",
            env={"MPINET_MEMORY_LIMIT": "1G"},
            ranks=2,
        ),
        C(
            "plan3-flit-int32-buffers",
            f"{FLIT} hypercube:24 --set model.vcs=64",
            r"flit run on hypercube:24 .* with vcs = 64 is 26,172,456,960 buffers per rank "
            r"\(links x \(VCs \+ 1\)\) on 1 rank\(s\), over the flit engine's 2\*\*31; way out: "
            r"13 or more ranks, or fewer VCs",
            cap=BEFORE_WORK,
        ),
        C(
            "plan3-flit-int32-buffers-mpi",
            f"{FLIT} hypercube:24 --set model.vcs=64",
            r"is 13,086,228,480 buffers per rank .* on 2 rank\(s\), over the flit engine's 2\*\*31",
            ranks=2,
        ),
        C(
            "plan3-flit-once-packets",
            "run --topology hypercube:16 --router hypercube-ecube --packets 256 "
            "--set model.switching=wormhole --set model.flits=16 --quiet",
            rf"run on hypercube:16 .* \(packet records .*segments .*\), {ULIMIT}; way out: "
            r".*fewer packets \(workload\.packets <= \d+ fits\)",
        ),
        C(
            "plan3-flit-cut-through",
            "run --topology hypercube:16 --router hypercube-ecube --workload uniform "
            "--injection bernoulli --rate 0.001 --steps 50 --set model.switching=cut-through "
            "--set model.flits=64 --set model.vc_buffer=64 --set model.vcs=64 --quiet",
            rf"run on hypercube:16 .* \(VC buffers .*\), {ULIMIT}",
        ),
        C(
            "plan3-flit-sweep",
            "sweep --topology hypercube:16 --router hypercube-ecube --rates 0.01 "
            "--set model.switching=wormhole --set model.flits=16 --set model.vcs=64 --quiet",
            rf"run on hypercube:16 .* needs about .* \(VC buffers .*\), {ULIMIT}",
        ),
    ),
    *section(
        "Plans 3: the machine's, the cgroup's and the process's limits",
        C("plan3-star13-cap", "info star:13", rf"BFS on star:13 .* needs about .*, {ULIMIT}"),
        C(
            "plan3-star13-cap-mpi",
            "info star:13",
            rf"BFS on star:13 .* needs about .*, {ULIMIT}",
            ranks=2,
        ),
        C("plan3-cayley13-cap", f"info {CAYLEY13}", rf"BFS on cayley:13:.* needs .*, {ULIMIT}"),
        C(
            "plan3-cayley13-cap-mpi",
            f"info {CAYLEY13}",
            rf"BFS on cayley:13:.* needs .*, {ULIMIT}",
            ranks=2,
        ),
        C(
            "plan3-star12-before-work",
            "info star:12",
            rf"BFS on star:12 .* needs about .*, {ULIMIT}; way out: a larger ulimit -v",
            cap=BEFORE_WORK,
        ),
        C(
            "plan3-deadlock-star9-cap",
            "deadlock star:9 --router shortest --quiet",
            rf"deadlock analysis of shortest on star:9 .* on rank 0 .*, {ULIMIT}",
            cap=1500000 << 10,
        ),
        C(
            "plan3-deadlock-star9-cap-mpi",
            "deadlock star:9 --router shortest --quiet",
            rf"deadlock analysis of shortest on star:9 .* on rank 0 .*, {ULIMIT}",
            cap=1500000 << 10,
            ranks=2,
        ),
        C(
            "plan3-run-limit-and-cap",
            f"{FLIT} hypercube:16 --set model.vcs=64",
            rf"run on hypercube:16 .*, {ULIMIT}",  # the process's limit binds first
            env={"MPINET_MEMORY_LIMIT": "64G"},
        ),
    ),
    *section(
        "Plans 3: file networks as deep as they are long",
        C(
            "plan3-deep-path",
            "info file:path.edges",
            rf"all-sources BFS on file:path\.edges \(100,000 nodes, degree 2\), {DEEP} "
            r"operations \(limit 4e\+10; about [\d.]+ hours on 1 rank\(s\)\); it can afford "
            r"about 128 sources; way out: --sources K \(K <= 128; an estimate\)",
            files=PATH_100K,
        ),
        C(
            "plan3-deep-path-mpi",
            "info file:path.edges",
            rf"{DEEP} operations \(limit 4e\+10; about [\d.]+ hours on 2 rank\(s\)\)",
            files=PATH_100K,
            ranks=2,
        ),
        C(
            "plan3-deep-path-sources",
            "info file:path.edges --sources 4096",
            rf"BFS from 4,096 sampled sources on file:path\.edges .*{DEEP} .*K <= 128;",
            files=PATH_100K,
        ),
        C(
            "plan3-deep-ring-sources",
            "info file:ring.edges --sources 4",
            r"BFS from 4 sampled sources on file:ring\.edges .*depth about 100,000 by 4 "
            r"sampled BFS.*; not even 64 sources \(one word of the bit-parallel search\) fit; "
            r"way out: --source LABEL",
            files=RING_200K,
        ),
        C(
            "plan3-deep-ring-sources-mpi",
            "info file:ring.edges --sources 4",
            r"depth about 100,000 by 4 sampled BFS.*not even 64 sources",
            files=RING_200K,
            ranks=2,
        ),
        C(
            "plan3-deep-grid",
            "info file:grid.edges",
            rf"all-sources BFS on file:grid\.edges \(90,000 nodes, degree 4\), {DEEP}",
            files=GRID,
        ),
        C(
            "plan3-deep-path-affordable",
            "info file:path.edges --sources 64 --json",
            None,
            code=0,
            files=PATH_20K,
            stdout=STRICT_JSON,
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("plan3-") for i in ids)


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
