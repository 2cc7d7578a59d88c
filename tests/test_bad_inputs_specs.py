"""The bad-input catalogue, part 3: topology specs of every family, routers, models and
workloads, faults, --set / --option and the command line, and export. Run and checked as
tests/test_bad_inputs.py describes.
"""

from __future__ import annotations

import pytest
from bad_inputs_common import (
    EDGES,
    NOTES,
    ROUTES,
    RUN,
    directory,
)
from catalogue import Case, param, run_and_check, section

C = Case
CASES: list[Case] = [
    *section(
        "Topology specs of every family",
        C("spec-star-1", "info star:1", r"N in star:N must be in \[3, 20\], got 1"),
        C("spec-star-1-mpi", "info star:1", r"N in star:N must be in \[3, 20\], got 1", ranks=2),
        C("spec-scc-2", "info scc:2", r"N in scc:N must be in \[3, 20\], got 2"),
        C("spec-scc-x", "info scc:x", r"N in scc:N must be an integer in \[3, 20\], got 'x'"),
        C("spec-ms-0-2", "info ms:0,2", r"L in ms:L,N must be in \[1, 20\], got 0"),
        C("spec-fccn-0", "info fccn:0", r"M in fccn:M must be in \[1, 10\], got 0"),
        C("spec-borel-not-prime", "info borel:6,2,0,1", r"P in borel:P,A,T1,T2 must be a prime in"),
        C(
            "spec-borel-arity",
            "info borel:7,2,0",
            r"borel takes 4 parameter\(s\): borel:P,A,T1,T2; got 'borel:7,2,0'",
        ),
        C("spec-hypercube-0", "info hypercube:0", r"N in hypercube:N must be in \[1, 40\], got 0"),
        C("spec-ccc-2", "info ccc:2", r"N in ccc:N must be in \[3, 30\], got 2"),
        C(
            "spec-ccc-2-mpi",
            "run --topology ccc:2 --quiet",
            r"N in ccc:N must be in \[3, 30\], got 2",
            ranks=2,
        ),
        C("spec-ims-empty", "info ims:", r"ims takes 3 parameter\(s\): ims:M,L,N; got 'ims:'"),
        C("spec-cms-empty", "info cms:", r"cms takes 3 parameter\(s\): cms:C,L,N; got 'cms:'"),
        C("spec-cms-0", "info cms:0,2,2", r"C in cms:C,L,N .* must be in \[2, 20\], got 0"),
        C(
            "spec-unknown-family",
            "run --topology foo:3",
            r"unknown topology family 'foo'; known: star:N, scc:N, ",
        ),
        C(
            "spec-no-colon",
            "info scc",
            r"topology spec must look like FAMILY:PARAMS, one of star:N, .*; got 'scc'",
        ),
        C(
            "source-out-of-range",
            "info star:4 --source #999",
            r"node id must be in \[0, 23\] for star:4, got 999",
        ),
    ),
    *section(
        "Routers, models, workloads",
        C("router-unknown", f"{RUN} --router zzz", r"unknown router 'zzz'; known: shortest, "),
        C(
            "router-not-applicable",
            f"{RUN} --router scc-greedy",
            r"router 'scc-greedy' applies to scc only, not star:4; routers for star: shortest, "
            r"star-greedy",
        ),
        C(
            "router-not-applicable-mpi",
            f"{RUN} --router scc-greedy",
            r"router 'scc-greedy' applies to scc only, not star:4",
            ranks=2,
        ),
        C(
            "routes-router-not-applicable",
            "routes scc:4 --router star-greedy",
            r"router 'star-greedy' applies to star only, not scc:4; routers for scc: ",
        ),
        C(
            "routes-option-unknown",
            f"{ROUTES} --option zzz=1",
            r"router 'scc-greedy' has no option\(s\) 'zzz'; its options: none",
        ),
        C(
            "model-unknown",
            f"{RUN} --model zzz",
            r"model must be one of all-port, one-port, k-port:K, sdc; got 'zzz'",
        ),
        C(
            "capacity-unknown-class",
            f"{RUN} --set 'model.capacity={{local=2}}'",
            r"model capacity names port class\(es\) \['local'\] that star:4 lacks; its classes are "
            r"\['star'\]",
        ),
        C(
            "buffer-classes-without-buffer",
            f"{RUN} --buffer-classes hops",
            r"buffer_classes = 'hops' needs a finite model buffer \(>= 1\)",
        ),
        C(
            "buffer-classes-unknown",
            f"{RUN} --buffer-classes zzz",
            r"buffer_classes must be 'none' or 'hops'; got 'zzz'",
        ),
        C("order-unknown", f"{RUN} --order zzz", r"order must be fifo or oldest-first, got 'zzz'"),
        C(
            "queues-calendar-not-applicable",
            f"{RUN} --model sdc --set model.queues=calendar",
            r"model\.queues = 'calendar' does not apply to this job: model sdc: .*; use 'auto'",
        ),
        C(
            "workload-unknown",
            f"{RUN} --workload zzz",
            r"workload\.kind must be one of uniform, permutation, .*; got 'zzz'",
        ),
        C(
            "injection-unknown",
            f"{RUN} --injection zzz",
            r"workload injection must be one of once, bernoulli, on_off; got 'zzz'",
        ),
        C(
            "te-algorithm-unknown",
            f"""{RUN} --workload te --set 'workload.algorithm="zzz"'""",
            r"TE algorithm must be one of schedule, routed; got 'zzz'",
        ),
        C(
            "trace-level-unknown",
            f"{RUN} --trace-level zzz",
            r"trace\.level must be none, summary or hops",
        ),
        C(
            "hotspot-target-bad-label",
            f"""{RUN} --workload hotspot --set 'workload.target="zzz"'""",
            r"star:4 label: permutation label 'zzz' must list the symbols 1\.\.4",
        ),
    ),
    *section(
        "Faults",
        C(
            "faults-not-neighbours",
            f"""{RUN} --set 'faults.links=[["1234","4321"]]'""",
            r"faults\.links: 1234 and 4321 are not neighbours in star:4",
        ),
        C(
            "faults-not-neighbours-mpi",
            f"""{RUN} --set 'faults.links=[["1234","4321"]]'""",
            r"faults\.links: 1234 and 4321 are not neighbours in star:4",
            ranks=2,
        ),
        C(
            "faults-unknown-label",
            f"""{RUN} --set 'faults.nodes=["12345"]'""",
            r"star:4 label: permutation label '12345' must hold each of the symbols 1\.\.4",
        ),
        C(
            "faults-not-a-pair",
            f"""{RUN} --set 'faults.links=["1234"]'""",
            r"faults\.links takes pairs of node labels",
        ),
        C(
            "faults-probability-above-one",
            f"{RUN} --set faults.random_links=1.5",
            r"faults\.random_links must be in \[0, 1\) \(a probability\), got 1\.5",
        ),
        C(
            "faults-probability-negative",
            f"{RUN} --set faults.random_nodes=-0.1",
            r"faults\.random_nodes must be in \[0, 1\) \(a probability\), got -0\.1",
        ),
        C(
            "faults-unknown-key",
            f"{RUN} --set faults.zzz=1",
            r"unknown key faults\.'?zzz'?; valid keys in \[faults\]: links, nodes, ",
        ),
        C(
            "info-faults-unknown-key",
            "info star:4 --faults zzz=1",
            r"--faults takes random_links=, random_nodes=, seed=, nodes=, links=; got 'zzz=1'",
        ),
    ),
    *section(
        "--set, --option and the command line",
        C(
            "set-without-equals",
            f"{RUN} --set workload.packets",
            r"--set takes KEY=VALUE \(e\.g\. workload\.packets=8\), got 'workload\.packets'",
        ),
        C("set-without-equals-mpi", f"{RUN} --set workload.packets", r"--set takes KEY=", ranks=2),
        C(
            "option-without-equals",
            f"{ROUTES} --option lookahead",
            r"--option takes KEY=VALUE \(e\.g\. .*\), got 'lookahead'",
        ),
        C("command-unknown", "zzz", r"invalid choice: 'zzz' \(choose from '?info'?, '?run'?"),
        C(
            "argument-required",
            "routes scc:4",
            r"the following arguments are required: --router.*mpinet routes --help",
        ),
        C(
            "argument-not-an-integer",
            f"{RUN} --packets x",
            r"argument --packets: workload\.packets must be an integer in \[1, 1,048,576\], "
            r"got 'x'.*mpinet run --help",
        ),
        C(
            "argument-invalid-choice",
            "export star:4 --format zzz",
            r"argument --format: invalid choice: 'zzz' \(choose from '?anynet'?",
        ),
        C(
            "arguments-exclusive",
            "info star:4 --quiet --progress",
            r"argument --progress: not allowed with argument --quiet",
        ),
    ),
    *section(
        "Export",
        C(
            "export-out-empty",
            f"{EDGES} --out ''",
            r"the edge list path is empty; give a file name such as --out net\.txt",
        ),
        C(
            "export-out-missing-dir",
            f"{EDGES} --out nodir/x.txt",
            r"cannot write .*nodir/x\.txt: directory .*nodir does not exist",
        ),
        C(
            "export-out-directory",
            f"{EDGES} --out sub --force",
            r"sub is a directory",
            files={"sub": directory},
        ),
        C(
            "export-out-existing",
            f"{EDGES} --out notes.txt",
            r"edge list .*notes\.txt exists; use --force to replace it",
            files=NOTES,
        ),
    ),
]


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
