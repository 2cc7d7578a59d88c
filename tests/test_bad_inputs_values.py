"""The bad-input catalogue, part 2: numbers (zero, negative, too large), settings that would
be ignored, and analyze. Run and checked as tests/test_bad_inputs.py describes.
"""

from __future__ import annotations

import pytest
from bad_inputs_common import (
    LINK,
    NOTES,
    ONE_PORT_BC,
    ROUTES,
    RUN,
    copy_of,
    corrupt_copy,
    directory,
    without_parts,
)
from catalogue import Case, param, run_and_check, section

C = Case
CASES: list[Case] = [
    *section(
        "Numbers: zero, negative, too large",
        C(
            "interval-zero",
            f"""run --topology scc:4 {ONE_PORT_BC} --set 'workload.algorithm="scc-one-port"' """
            "--set workload.interval=0",
            r"workload\.interval must be in \[1, 2,147,483,646\], got 0",
        ),
        C(
            "interval-negative",
            f"{RUN} --set workload.interval=-2",
            r"workload\.interval must be in \[1, .*got -2",
        ),
        C("packets-zero", f"{RUN} --packets 0", r"workload\.packets must be in \[1, .*got 0"),
        C("packets-negative", f"{RUN} --packets -3", r"workload\.packets must be in \[1, .*got -3"),
        C(
            "packets-too-many",
            f"{RUN} --packets {2**40}",
            r"workload\.packets must be in \[1, 1,048,576\]",
        ),
        C("max-steps-zero", f"{RUN} --max-steps 0", r"max_steps must be in \[1, .*got 0"),
        C(
            "max-steps-2e40",
            f"{RUN} --max-steps {2**40}",
            r"max_steps must be in \[1, 2,147,483,646\]",
        ),
        C(
            "messages-zero",
            f"{RUN} --set workload.messages=0",
            r"workload\.messages must be in \[1, .*got 0",
        ),
        C("steps-zero", f"{RUN} --steps 0", r"workload\.steps must be in \[1, .*got 0"),
        C(
            "rate-zero",
            f"{RUN} --injection bernoulli --steps 3 --rate 0",
            r"workload\.rate must be in \(0, 1\] \(a probability\), got 0",
        ),
        C(
            "rate-above-one",
            f"{RUN} --injection bernoulli --steps 3 --rate 1.5",
            r"workload\.rate must be in \(0, 1\] .*got 1\.5",
        ),
        C(
            "rate-nan",
            f"{RUN} --injection bernoulli --steps 3 --rate nan",
            r"workload\.rate must be in \(0, 1\] .*got nan",
        ),
        C("buffer-negative", f"{RUN} --buffer -1", r"model\.buffer must be in \[0, .*got -1"),
        C(
            "max-hops-zero",
            f"{RUN} --buffer 1 --buffer-classes hops --set model.max_hops=0",
            r"model\.max_hops must be in \[1, 1,024\], got 0",
        ),
        C(
            "capacity-zero",
            f"{RUN} --set 'model.capacity={{star=0}}'",
            r"capacity of port class 'star' must be in \[1, 1,048,576\], got 0",
        ),
        C("k-port-zero", f"{RUN} --model k-port:0", r"K in model k-port:K must be in \[1, .*got 0"),
        C(
            "k-port-zero-mpi",
            f"{RUN} --model k-port:0",
            r"K in model k-port:K must be in \[1, .*got 0",
            ranks=2,
        ),
        C(
            "faults-step-negative",
            f"{RUN} {LINK} --set faults.step=-1",
            r"faults\.step must be (>= 0|in \[0, ).*got -1",
        ),
        C(
            "timeout-zero-mpi",
            f"{RUN} --trace-level none --timeout 0",
            r"argument --timeout: must be in \[0\.1, 604,800\] seconds, got 0",
            ranks=2,
        ),
        C(
            "timeout-env-garbage-mpi",
            f"{RUN} --trace-level none",
            r"MPINET_TIMEOUT must be a number of seconds in \[0\.1, 604,800\], got 'soon'",
            env={"MPINET_TIMEOUT": "soon"},
            ranks=2,
        ),
        C(
            "routes-sample-zero",
            f"{ROUTES} --pairs sample:0",
            r"--pairs sample:K needs an integer K >= 1, got 'sample:0'",
        ),
        C(
            "deadlock-max-hops-zero",
            "deadlock scc:4 --router shortest --max-hops 0",
            r"argument --max-hops: must be in \[1, 65,536\], got 0",
        ),
        C(
            "fault-diameter-zero",
            "info star:4 --fault-diameter 0",
            r"argument --fault-diameter: K must be in \[1, 2\], got 0",
        ),
        C(
            "bench-packets-zero",
            "bench --specs star:4 --packets 0",
            r"--packets must be >= 1, got '0'",
        ),
        C(
            "bench-repeat-zero",
            "bench --specs star:4 --repeat 0",
            r"argument --repeat: must be in \[1, 1,000\], got 0",
        ),
        C(
            "sweep-warmup-negative",
            "sweep --topology star:4 --warmup -1",
            r"warmup\b.* must be in \[0, [\d,]+\], got -1",
        ),
        C(
            "sweep-rates-garbage",
            "sweep --topology star:4 --rates lots",
            r"--rates takes .*a range a:b:n.*; got 'lots'",
        ),
    ),
    *section(
        "Settings that would be ignored",
        C(
            "all-to-identity-packets",
            f"{RUN} --workload all-to-identity --packets 8",
            r"workload\.packets = 8: all-to-identity sends exactly one packet .*'hotspot'",
        ),
        C(
            "tie-on-scc-greedy",
            """run --topology scc:4 --router scc-greedy --set 'router.tie="random"'""",
            r"router 'scc-greedy' has no option\(s\) 'tie'; its options: none",
        ),
        C(
            "tie-on-scc-greedy-mpi",
            """run --topology scc:4 --router scc-greedy --set 'router.tie="random"'""",
            r"router 'scc-greedy' has no option\(s\) 'tie'",
            ranks=2,
        ),
        C(
            "rate-with-once",
            f"{RUN} --rate 0.1",
            r"workload\.rate = 0\.1 has no effect: applies to injection = 'bernoulli' only",
        ),
        C(
            "steps-with-once",
            f"{RUN} --steps 5",
            r"workload\.steps = 5 has no effect: applies to injection = 'bernoulli' only",
        ),
        C(
            "packets-with-bernoulli",
            f"{RUN} --injection bernoulli --rate 0.1 --steps 3 --packets 2",
            r"workload\.packets = 2 has no effect",
        ),
        C(
            "trace-none-with-out",
            f"{RUN} --trace-level none --out x.h5",
            r"--out x\.h5: trace\.level = 'none' writes no trace; drop --out or use "
            r"--trace-level summary",
        ),
        C(
            "trace-none-with-out-mpi",
            f"{RUN} --trace-level none --out x.h5",
            r"trace\.level = 'none' writes no trace",
            ranks=2,
        ),
        C(
            "trace-level-without-file",
            f"{RUN} --trace-level hops",
            r"trace\.level = 'hops' has no effect without a trace file; give --out PATH",
        ),
        C(
            "packets-on-te",
            f"{RUN} --workload te --packets 2",
            r"workload\.packets = 2 has no effect: workload\.kind = 'te' does not read it",
        ),
        C(
            "target-outside-hotspot",
            f"""{RUN} --set 'workload.target="1234"'""",
            r"workload\.target = '1234' has no effect: .*hotspot",
        ),
        C(
            "interval-outside-scc-broadcast",
            f"{RUN} {ONE_PORT_BC} --set workload.interval=3",
            r"workload\.interval = 3 has no effect: .*scc-one-port",
        ),
        C(
            "faults-step-without-faults",
            f"{RUN} --set faults.step=5",
            r"faults\.step = 5 has no effect without failed links or nodes",
        ),
        C(
            "verify-only-zzz",
            "verify --only zzz",
            r"--only 'zzz' matches no check .*`mpinet verify --list --full` lists",
        ),
        C("verify-only-zzz-mpi", "verify --only zzz", r"--only 'zzz' matches no check", ranks=2),
    ),
    *section(
        "Analyze",
        C("analyze-missing", "analyze none.h5", r"trace file none\.h5 does not exist"),
        C(
            "analyze-not-hdf5",
            "analyze notes.txt",
            r"notes\.txt is not an mpinet trace \(not an HDF5 file\)",
            files=NOTES,
        ),
        C(
            "analyze-directory",
            "analyze sub",
            r"sub is (not an mpinet trace|a directory)",
            files={"sub": directory},
        ),
        C(
            "analyze-corrupt-column",
            "analyze t.h5",
            r"trace .*/packets/hops is damaged.*checksum",
            code=1,
            files={"t.h5": corrupt_copy("/packets/hops")},
        ),
        C(
            "analyze-compare-corrupt",
            "analyze a.h5 --compare t.h5",
            r"trace .*/steps/step is damaged.*checksum",
            code=1,
            files={"a.h5": copy_of("serial"), "t.h5": corrupt_copy("/steps/step")},
        ),
        C(
            "analyze-split-without-parts",
            "analyze s.h5",
            r"s\.h5 .*lacks 2 of 2 part files",
            code=1,
            files={"s.h5": without_parts},
        ),
        C(
            "analyze-compare-missing",
            "analyze t.h5 --compare none.h5",
            r"trace file none\.h5 does not exist",
            files={"t.h5": copy_of("serial")},
        ),
    ),
]


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
