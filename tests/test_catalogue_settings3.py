"""The third settings catalogue (issue 32 item 5): settings that cannot take effect, and
sweeps that report only what they measured.

A dateline VC policy where the network has no ring to cut, packet-engine buffer keys on a
flit job (0 as well as 4), packets of more flits than ``max_steps`` lets cross one link:
each refused in one line before any work, in every switching mode and under mpiexec. The
ring that dateline does order (an 8-node cycle as an edge list) runs and is analysed as
deadlock-free. A sweep with one unstable load, only stable loads, or only a deadlocked
one says "not found" in its text and ``--json`` (strict, ``found`` false, no load, no
bracket). Checked by :func:`catalogue.check`.
"""

from __future__ import annotations

import pytest
from catalogue import STRICT_JSON, Case, param, run_and_check, section

RING = "".join(f"{i} {(i + 1) % 8}\n" for i in range(8))
PATH = "0 1\n1 2\n2 3\n"
RUN = "run --quiet"
WH = "--set model.switching=wormhole"
DATELINE = f"{WH} --set model.vcs=2 --set model.vc_policy=dateline"
DEADLOCK = "--router shortest --switching wormhole --vc-policy dateline"
NO_RING = (r"vc_policy 'dateline' orders nothing on {}: it has nodes of degree {}, so every hop "
           r"would take VC 0; dateline applies to ccc:N, scc:N \(N >= 4\) and networks that are "
           r"one ring")  # fmt: skip
BUFFERS = (r"has no effect with model\.{}: model\.buffer and model\.buffer_classes are "
           r"packet buffers of the store-and-forward engine; with switching keys use "
           r"model\.vc_buffer")  # fmt: skip
ARRIVE = (r"model\.flits = {} cannot arrive within max_steps = {}: even over one link a packet "
          r"needs ceil\(L / c\) = {} steps")  # fmt: skip
SWEEP = "sweep --topology star:4 --warmup 100 --measure 200 --drain 200 --quiet"
UNSTABLE = (r"\nsaturation +not found: no stable load was measured below 0\.9000 \(saturated "
            r"by [a-z, ]+\), so there is no bracket")  # fmt: skip
C = Case
CASES: list[Case] = [
    *section(
        "Settings that cannot take effect: dateline without a ring",
        C(
            "set3-dateline-hypercube",
            f"{RUN} --topology hypercube:3 {DATELINE}",
            NO_RING.format("hypercube:3", r"3, not one ring"),
        ),
        C(
            "set3-dateline-star",
            f"{RUN} --topology star:4 {DATELINE}",
            NO_RING.format("star:4", r"3, not one ring"),
        ),
        C(
            "set3-dateline-ms",
            f"{RUN} --topology ms:2,2 {DATELINE}",
            NO_RING.format("ms:2,2", r"3, not one ring"),
        ),
        C(
            "set3-dateline-path-file",
            f"{RUN} --topology file:path.edges {DATELINE}",
            NO_RING.format(r"file:\S*path\.edges", r"1 \(a path\), not one ring"),
            files={"path.edges": PATH},
        ),
        C(
            "set3-dateline-mpi",
            f"{RUN} --topology hypercube:3 {DATELINE}",
            NO_RING.format("hypercube:3", r"3, not one ring"),
            ranks=2,
        ),
        C(
            "set3-dateline-deadlock-hypercube",
            f"deadlock hypercube:3 {DEADLOCK}",
            NO_RING.format("hypercube:3", r"3, not one ring"),
        ),
        C(
            "set3-dateline-deadlock-path-file",
            f"deadlock file:path.edges {DEADLOCK}",
            NO_RING.format(r"file:\S*path\.edges", r"1 \(a path\), not one ring"),
            files={"path.edges": PATH},
        ),
        C(
            "set3-dateline-ring-file-runs",
            f"{RUN} --topology file:ring.edges {DATELINE} --set model.flits=8 --packets 16",
            None,
            code=0,
            files={"ring.edges": RING},
            stdout=r"\nchecks +all passed",
        ),
        C(
            "set3-dateline-ring-file-runs-mpi",
            f"{RUN} --topology file:ring.edges {DATELINE} --set model.flits=8 --packets 16",
            None,
            code=0,
            files={"ring.edges": RING},
            stdout=r"\nchecks +all passed",
            ranks=2,
        ),
        C(
            "set3-dateline-ring-file-acyclic",
            f"deadlock file:ring.edges {DEADLOCK}",
            None,
            code=0,
            files={"ring.edges": RING},
            stdout=r"ACYCLIC: no deadlock is possible with 2 VCs",
        ),
        C(
            "set3-any-ring-file-cycle",
            "deadlock file:ring.edges --router shortest --switching wormhole --vcs 2",
            None,
            code=1,
            files={"ring.edges": RING},
            stdout=r"CYCLIC: 32 channels on or between cycles; a shortest cycle found has 8",
        ),
    ),
    *section(
        "Settings that cannot take effect: packet buffers with flits",
        C(
            "set3-buffer-zero-wormhole",
            f"{RUN} --topology star:4 {WH} --buffer 0",
            r"<flags>: model\.buffer " + BUFFERS.format("switching"),
        ),
        C(
            "set3-buffer-zero-cut-through",
            f"{RUN} --topology star:4 --set model.switching=cut-through --buffer 0",
            r"<flags>: model\.buffer " + BUFFERS.format("switching"),
        ),
        C(
            "set3-buffer-four-flits",
            f"{RUN} --topology star:4 --set model.flits=4 --buffer 4",
            r"<flags>: model\.buffer " + BUFFERS.format("flits"),
        ),
        C(
            "set3-buffer-classes-none-vcs",
            f"{RUN} --topology star:4 --set model.vcs=2 --buffer-classes none",
            r"<flags>: model\.buffer_classes " + BUFFERS.format("vcs"),
        ),
        C(
            "set3-max-hops-wormhole",
            f"{RUN} --topology star:4 {WH} --set model.max_hops=8",
            r"<flags>: model\.max_hops has no effect with model\.switching: it bounds the packet "
            r"buffer classes of the store-and-forward engine",
        ),
        C(
            "set3-buffer-zero-sweep",
            f"{SWEEP} --rates 0.1 --set model.flits=4 --buffer 0",
            r"<flags>: model\.buffer " + BUFFERS.format("flits"),
        ),
        C(
            "set3-buffer-zero-mpi",
            f"{RUN} --topology star:4 {WH} --buffer 0",
            r"<flags>: model\.buffer " + BUFFERS.format("switching"),
            ranks=2,
        ),
        C(
            "set3-buffer-packet-model-runs",
            f"{RUN} --topology star:4 --set model.switching=store-and-forward --buffer 4",
            None,
            code=0,
            stdout=r"\nchecks +all passed",
        ),
    ),
    *section(
        "Settings that cannot take effect: packets longer than max_steps",
        C(
            "set3-flits-max-steps-wormhole",
            f"{RUN} --topology star:4 {WH} --set model.flits=1000 --max-steps 100",
            ARRIVE.format("1,000", "100", "1,000"),
        ),
        C(
            "set3-flits-max-steps-cut-through",
            f"{RUN} --topology star:4 --set model.switching=cut-through --set model.flits=1000 "
            "--max-steps 100",
            ARRIVE.format("1,000", "100", "1,000"),
        ),
        C(
            "set3-flits-max-steps-store-and-forward",
            f"{RUN} --topology star:4 --set model.flits=1000 --max-steps 100",
            ARRIVE.format("1,000", "100", "1,000"),
        ),
        C(
            "set3-flits-max-steps-capacity",
            f"{RUN} --topology star:4 {WH} --set model.flits=8 --set model.capacity={{star=2}} "
            "--max-steps 3",
            ARRIVE.format("8", "3", "4"),
        ),
        C(
            "set3-flits-max-steps-mpi",
            f"{RUN} --topology star:4 {WH} --set model.flits=1000 --max-steps 100",
            ARRIVE.format("1,000", "100", "1,000"),
            ranks=2,
        ),
        C(
            "set3-flits-sweep-drain",
            "sweep --topology star:4 --rates 0.01 --warmup 10 --measure 20 --drain 10 --quiet "
            f"{WH} --set model.flits=1000",
            r"sweep drain \(--drain\) = 10 is too short for packets of 1,000 flits: one needs at "
            r"least ceil\(L / c\) = 1,000 steps .*raise --drain to at least 999$",
        ),
        C(
            "set3-flits-max-steps-exact-runs",
            f"{RUN} --topology hypercube:1 {WH} --set model.flits=8 --max-steps 8",
            None,
            code=0,
            stdout=r"\nchecks +all passed",
        ),
    ),
    *section(
        "Sweeps that report only what they measured",
        C(
            "set3-sweep-one-unstable-text",
            f"{SWEEP} --rates 0.9",
            None,
            code=0,
            stdout=UNSTABLE + r"[^\n]*\nthroughput +none sustained: no load measured was stable",
        ),
        C(
            "set3-sweep-one-unstable-json",
            f"{SWEEP} --rates 0.9 --json",
            None,
            code=0,
            stdout=r'"saturation": \{"found": false, "load": null, "bracket": null, '
            r'"load_fraction_of_bound": null, [^}]*"throughput": null',
        ),
        C(
            "set3-sweep-one-unstable-json-strict",
            f"{SWEEP} --rates 0.9 --json",
            None,
            code=0,
            stdout=STRICT_JSON,
        ),
        C(
            "set3-sweep-one-unstable-mpi",
            f"{SWEEP} --rates 0.9",
            None,
            code=0,
            stdout=UNSTABLE,
            ranks=2,
        ),
        C(
            "set3-sweep-all-stable-text",
            f"{SWEEP} --rates 0.05,0.1",
            None,
            code=0,
            stdout=r"\nsaturation +not found: none up to load 0\.1000 \(every load measured was "
            r"stable\): saturation is above it",
        ),
        C(
            "set3-sweep-all-stable-json",
            f"{SWEEP} --rates 0.05,0.1 --json",
            None,
            code=0,
            stdout=r'"saturation": \{"found": false, "load": null, "bracket": null, [^}]*'
            r'"highest_stable": 0\.1, "lowest_unstable": null',
        ),
        C(
            "set3-sweep-bracket-measured",
            f"{SWEEP} --rates 0.1,0.9",
            None,
            code=0,
            stdout=r"\nsaturation +load 0\.5000 \(0\.1000 stable, 0\.9000 saturated by",
        ),
        C(
            "set3-sweep-deadlocked-only",
            "sweep --topology star:5 --buffer 1 --rates 0.6 --warmup 100 --measure 300 "
            "--drain 100 --quiet",
            None,
            code=1,
            stdout=r"\nsaturation +not found: no stable load was measured below 0\.6000 "
            r"\(deadlocked\)",
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("set3-") for i in ids)
    assert len(CASES) >= 20 and sum(c.ranks > 1 for c in CASES) >= 3


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_settings3_case(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
