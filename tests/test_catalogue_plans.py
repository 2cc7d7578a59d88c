"""The plans catalogue: every command estimates its memory and work before it starts.

Input files read without bound (``/dev/zero``, a FIFO nobody writes, a file of megabytes),
deadlock analyses of networks whose dependency graphs would fill the machine, sweeps of
absurd load counts or windows, exports of terabytes, ``routes --engine`` past the engine's
int32 queues and ``analyze`` beyond the memory given: each is refused in one line (exit
code 2, agreed by every rank under ``mpiexec -n 2``) before anything sizeable is
allocated, and answers within the catalogue's limit (:mod:`catalogue`). Cases that need a
real big job to be refused set ``MPINET_MEMORY_LIMIT`` low instead of allocating.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from catalogue import Case, Given, described, param, run_and_check, section

LIMIT_2G = {"MPINET_MEMORY_LIMIT": "2G"}
FIFO_SAYS = r"job file job\.toml \(a FIFO or pipe\) gave 0 bytes and had not ended after 10 s"
DEPS = r"its dependency graph would have about [\d,]+ dependencies .*over the limit of 134,217,728"


@described("-> a FIFO outside the directory that nobody writes")
def fifo(path: Path, traces) -> None:
    target = Path(tempfile.mkdtemp(prefix="mpinet-fifo-")) / "job.fifo"
    os.mkfifo(target)
    path.symlink_to(target)


@described("a real trace")
def trace(path: Path, traces) -> None:
    shutil.copy(traces()["serial"], path)


BIG = Given(b"#" * (2 << 20), "2 MiB of `#`")

C = Case
CASES: list[Case] = [
    *section(
        "Plans: input files read with a limit",
        C(
            "plan-run-dev-zero",
            "run /dev/zero",
            r"job file /dev/zero \(a character device\) gave more than 1 MiB, the limit",
        ),
        C(
            "plan-run-dev-zero-mpi",
            "run /dev/zero",
            r"job file /dev/zero \(a character device\) gave more than 1 MiB, the limit",
            ranks=2,
        ),
        C(
            "plan-run-dev-urandom",
            "run /dev/urandom",
            r"job file /dev/urandom \(a character device\) gave more than 1 MiB, the limit",
        ),
        C(
            "plan-run-big-job-file",
            "run big.toml",
            r"job file big\.toml holds 2,097,152 bytes, over the limit of 1 MiB \(a job file "
            r"is a small TOML text\)",
            files={"big.toml": BIG},
        ),
        C("plan-run-fifo", "run job.toml", FIFO_SAYS, files={"job.toml": fifo}),
        C("plan-run-fifo-mpi", "run job.toml", FIFO_SAYS, files={"job.toml": fifo}, ranks=2),
        C(
            "plan-info-faults-file-dev-zero",
            "info star:4 --faults-file /dev/zero",
            r"job file /dev/zero \(a character device\) gave more than 1 MiB, the limit",
        ),
        C(
            "plan-info-faults-file-big",
            "info star:4 --faults-file big.toml",
            r"job file big\.toml holds 2,097,152 bytes, over the limit of 1 MiB",
            files={"big.toml": BIG},
        ),
        C(
            "plan-sweep-fifo",
            "sweep job.toml --rates 0.1 --quiet",
            FIFO_SAYS,
            files={"job.toml": fifo},
        ),
    ),
    *section(
        "Plans: deadlock analyses",
        C("plan-deadlock-star11", "deadlock star:11 --router shortest", DEPS),
        C("plan-deadlock-star11-mpi", "deadlock star:11 --router shortest", DEPS, ranks=2),
        C("plan-deadlock-star10", "deadlock star:10 --router shortest", DEPS),
        C(
            "plan-deadlock-star9-hops",
            "deadlock star:9 --router shortest --buffer-classes hops",
            DEPS,
        ),
        C("plan-deadlock-hypercube30", "deadlock hypercube:30 --router hypercube-ecube", DEPS),
        C(
            "plan-deadlock-ms33-memory",
            "deadlock ms:3,3 --router shortest",
            r"deadlock analysis of shortest on ms:3,3 .* needs about [\d.]+ GiB on rank 0 "
            r"\(dependency graph .*is available \(MPINET_MEMORY_LIMIT\); way out: a smaller "
            r"network",
            env=LIMIT_2G,
        ),
        C(
            "plan-deadlock-ms33-memory-mpi",
            "deadlock ms:3,3 --router shortest",
            r"deadlock analysis of shortest on ms:3,3 .* on rank 0 .* for the 2 rank\(s\) on "
            r"this machine",
            env=LIMIT_2G,
            ranks=2,
        ),
        C(
            "plan-deadlock-fccn5-all",
            "deadlock fccn:5 --router fccn-sroute",
            r"following every route of fccn:5 \(32,768 nodes\) means N\*N = 1,073,741,824 "
            r"pairs, over the limit of 67,108,864; way out: a smaller network",
        ),
        C(
            "plan-deadlock-star9-all",
            "deadlock star:9 --router shortest --destinations all",
            r"following every route of star:9 .* way out: --destinations symmetry, or a "
            r"smaller network",
        ),
    ),
    *section(
        "Plans: sweeps",
        C(
            "plan-sweep-rates-range-huge",
            "sweep --topology star:4 --rates 0.1:0.5:1000000000",
            r"--rates 0\.1:0\.5:1000000000: a range needs n in \[2, 1,000\] loads",
        ),
        C(
            "plan-sweep-coarse-huge",
            "sweep --topology star:4 --coarse 100000",
            r"sweep coarse \(--coarse\) must be in \[2, 1,000\], got 100,000",
        ),
        C(
            "plan-sweep-bisect-huge",
            "sweep --topology star:4 --bisect 50",
            r"sweep bisect \(--bisect\) must be in \[0, 40\], got 50",
        ),
        C(
            "plan-sweep-warmup-work",
            "sweep --topology star:4 --warmup 536870912",
            r"sweep on star:4 .* would cost about [\d.e+]+ packet-hops per rank .* over the "
            r"limit of 1e\+12; way out: fewer loads",
        ),
        C(
            "plan-sweep-warmup-work-mpi",
            "sweep --topology star:4 --warmup 536870912",
            r"sweep on star:4 .* over the limit of 1e\+12",
            ranks=2,
        ),
        C(
            "plan-sweep-ms33-memory",
            "sweep --topology ms:3,3 --rates 0.1,0.9",
            r"sweep on ms:3,3 .* at load 0\.9 needs about .* per rank .* way out: .*lower "
            r"loads",
            env={"MPINET_MEMORY_LIMIT": "8G"},  # the plan of one packet per node fits
        ),
        C(
            "plan-sweep-measure-memory",
            "sweep --topology star:6 --rates 0.5 --measure 200000",
            r"sweep on star:6 .* at load 0\.5 needs about .*MPINET_MEMORY_LIMIT",
            env={"MPINET_MEMORY_LIMIT": "300M"},
        ),
    ),
    *section(
        "Plans: export, routes and analyze",
        C(
            "plan-export-hypercube30",
            "export hypercube:30 --format edgelist",
            r"exporting hypercube:30 .* would write about 990\.0 GiB \(32,212,254,720 lines, "
            r"about [\d,]+ min\), over the limit of 2\.0 GiB",
        ),
        C(
            "plan-export-hypercube30-mpi",
            "export hypercube:30 --format edgelist",
            r"exporting hypercube:30 .* over the limit of 2\.0 GiB",
            ranks=2,
        ),
        C(
            "plan-export-chunk-memory",
            "export hypercube:18 --format graphml",
            r"export of hypercube:18 .* as graphml needs about .* on rank 0 \(chunk of text",
            env={"MPINET_MEMORY_LIMIT": "200M"},
        ),
        C(
            "plan-routes-engine-queues",
            "routes hypercube:27 --router hypercube-ecube --engine --pairs sample:10",
            r"--engine on hypercube:27 .* is 3,623,878,656 link queues per rank on 1 rank\(s\), "
            r"over 2\*\*31; way out: 3 or more ranks, or no --engine",
        ),
        C(
            "plan-analyze-memory",
            "analyze t.h5",
            r"analyze star:4 needs about .* \(interpreter, numpy, MPI .*MPINET_MEMORY_LIMIT\); "
            r"way out: a smaller --chunk-rows",
            files={"t.h5": trace},
            env={"MPINET_MEMORY_LIMIT": "150M"},
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 20 and sum(c.ranks > 1 for c in CASES) >= 5


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
