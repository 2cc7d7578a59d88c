"""The values catalogue: NaN, infinities, absurd ranges and wrong types, refused everywhere.

One validator (``mpinet.values``) judges every number mpinet is given: job keys (files and
``--set``), command-line flags, environment variables, ``info --faults`` and faults files.
Each case runs the real CLI and is checked by :func:`catalogue.check` (exit code 2, one
line from rank 0 naming the value and its range, no traceback, nothing written, nothing
on stdout); the cases that run (code 0) check what the run says: faults that were never
reached said so, ``--set`` merged, and ``--json`` strict JSON (:data:`STRICT_JSON`: no
bare ``NaN``) from runs whose results hold NaN (nothing delivered).
"""

from __future__ import annotations

import pytest
from catalogue import STRICT_JSON, Case, param, run_and_check, section

RUN = "run --topology star:4 --quiet"
LOCALITY = "run --topology fccn:3 --workload locality --quiet --set"
BERNOULLI = f"{RUN} --injection bernoulli --rate 0.1"
LINK = """--set 'faults.links=[["1234","2134"]]'"""  # neighbours in star:4
FAULTS_FILE = "info star:4 --faults-file f.toml"
SWEEP = "sweep --topology star:4 --quiet"
PROB = r"must be in \[0, 1\] \(a probability\), got "
SEED = r"seed must be in \[0, 9,223,372,036,854,775,807\], got "
TIMEOUT = r"MPINET_TIMEOUT must be in \[0\.1, 604,800\] seconds, got "
NOTHING_DELIVERED = "--set faults.random_nodes=0.9999999"  # every node fails: stretch is NaN


def faults_file(body: str) -> dict:
    return {"f.toml": f'topology = "star:4"\n[faults]\n{body}\n'}


C = Case
CASES: list[Case] = [
    *section(
        "Values: job keys, files and --set",
        C(
            "locality-nan",
            f"{LOCALITY} workload.locality=nan",
            r"workload\.locality " + PROB + "nan",
        ),
        C(
            "locality-inf",
            f"{LOCALITY} workload.locality=inf",
            r"workload\.locality " + PROB + "inf",
        ),
        C("locality-negative", f"{LOCALITY} workload.locality=-0.5", PROB + r"-0\.5"),
        C("locality-above-one", f"{LOCALITY} workload.locality=1.5", PROB + r"1\.5"),
        C(
            "locality-list-with-nan",
            f"{LOCALITY} 'workload.locality=[0.5, nan]'",
            r"workload\.locality\[1\] " + PROB + "nan",
        ),
        C(
            "locality-list-wrong-length",
            f"{LOCALITY} 'workload.locality=[0.5]'",
            r"workload\.locality must be one probability or 2 values \[p_2\.\.p_3\] in \[0, 1\] "
            r"on fccn:3, got \[0\.5\]",
        ),
        C(
            "locality-string",
            f"""{LOCALITY} 'workload.locality="high"'""",
            r"workload\.locality must be a probability in \[0, 1\] or a list .*got 'high'",
        ),
        C(
            "locality-empty-list",
            f"{LOCALITY} 'workload.locality=[]'",
            r"workload\.locality must be a probability or a list .*got \[\]",
        ),
        C(
            "locality-nan-mpi",
            f"{LOCALITY} workload.locality=nan",
            r"workload\.locality " + PROB + "nan",
            ranks=2,
        ),
        C(
            "job-file-rate-nan",
            "run job.toml",
            r"job\.toml: workload\.rate must be in \(0, 1\] \(a probability\), got nan",
            files={
                "job.toml": 'topology = "star:4"\n[workload]\ninjection = "bernoulli"\n'
                "rate = nan\nsteps = 10\n"
            },  # fmt: skip
        ),
        C(
            "job-file-packets-float",
            "run job.toml",
            r"job\.toml: workload\.packets must be an integer in \[1, 1,048,576\], got 8\.0",
            files={"job.toml": 'topology = "star:4"\n[workload]\npackets = 8.0\n'},
        ),
        C(
            "set-rate-inf",
            f"{RUN} --injection bernoulli --steps 5 --set workload.rate=inf",
            r"workload\.rate must be in \(0, 1\] \(a probability\), got inf",
        ),
        C(
            "set-capacity-nan",
            f"{RUN} --set 'model.capacity={{star=nan}}'",
            r"model\.capacity of port class 'star' must be in \[1, 1,048,576\], got nan",
        ),
        C(
            "set-capacity-string",
            f"""{RUN} --set 'model.capacity={{star="2"}}'""",
            r"model\.capacity of port class 'star' must be an integer in \[1, .*got '2'",
        ),
        C(
            "set-seed-float",
            f"{RUN} --set seed=1.5",
            SEED.replace("must be in", "must be an integer in") + r"1\.5",
        ),
        C(
            "set-max-steps-inf",
            f"{RUN} --set max_steps=inf",
            r"max_steps must be in \[1, 2,147,483,646\], got inf",
        ),
        C(
            "set-random-links-nan",
            f"{RUN} --set faults.random_links=nan",
            r"faults\.random_links must be in \[0, 1\) \(a probability\), got nan",
        ),
        C(
            "set-section-number",
            f"{RUN} --set workload=5",
            r"\[workload\] must be a table or a kind \(a string\), got 5",
        ),
    ),
    *section(
        "Values: settings that can never take effect",
        C(
            "router-with-te-schedule",
            "run --topology ms:2,2 --quiet --workload te --router shortest",
            r"router\.name = 'shortest' has no effect: the total exchange's schedule "
            r"\(algorithm = 'schedule'\) moves every packet along its own word; set "
            r"workload\.algorithm = 'routed' to follow \[router\]; remove it",
        ),
        C(
            "router-with-broadcast",
            "run --topology star:4 --quiet --workload broadcast --router star-greedy",
            r"router\.name = 'star-greedy' has no effect: the broadcast algorithm 'flooding' is "
            r"a node program, not routed",
        ),
        C(
            "router-tie-with-mnb-tree-mpi",
            """run --topology star:4 --quiet --workload mnb --set 'router.tie="random"'""",
            r"router\.tie = 'random' has no effect: mnb algorithm 'tree' sends along its own "
            r"spanning trees",
            ranks=2,
        ),
        C(
            "router-with-emulate-star",
            "run --topology ms:2,2 --quiet --workload emulate-star --model sdc --router shortest",
            r"router\.name = 'shortest' has no effect: the emulation moves every packet along "
            r"its MS word",
        ),
        C(
            "bernoulli-steps-beyond-max-steps",
            f"{BERNOULLI} --steps 1000 --max-steps 50",
            r"workload\.steps = 1,000 can never take effect: the run stops at max_steps = 50, "
            r"so injection would end there; raise max_steps to at least 1,000",
        ),
        C(
            "bernoulli-steps-beyond-max-steps-mpi",
            f"{BERNOULLI} --steps 1000 --max-steps 50",
            r"workload\.steps = 1,000 can never take effect",
            ranks=2,
        ),
        C(
            "bernoulli-steps-beyond-default-max-steps",
            f"{BERNOULLI} --steps 200000",
            r"workload\.steps = 200,000 can never take effect: .*max_steps = 100,000",
        ),
        C(
            "fault-step-beyond-max-steps",
            f"{RUN} {LINK} --set faults.step=500 --max-steps 100",
            r"faults\.step = 500 can never take effect: the run stops at max_steps = 100 at the "
            r"latest; lower faults\.step or raise max_steps",
        ),
        C(
            "fault-step-beyond-max-steps-job-file",
            "run job.toml",
            r"job\.toml: faults\.step = 40 can never take effect: .*max_steps = 30",
            files={
                "job.toml": 'topology = "star:4"\nmax_steps = 30\n[faults]\n'
                'nodes = ["4321"]\nstep = 40\n'
            },  # fmt: skip
        ),
        C(
            "max-hops-without-hop-classes",
            f"{RUN} --set model.max_hops=5",
            r"model\.max_hops = 5 has no effect: it bounds the buffer classes of "
            r"model\.buffer_classes = 'hops' only",
        ),
        C(
            "fault-step-not-reached",
            f"{RUN} {LINK} --set faults.step=50",
            None,
            code=0,
            stdout=r"links would fail from step 50, NOT APPLIED: the run ended at step \d+;",
        ),
        C(
            "fault-step-not-reached-json",
            f"{RUN} {LINK} --set faults.step=50 --json",
            None,
            code=0,
            stdout=r'"faults": \{"failed_nodes": 0, "failed_links": 1, "step": 50, "nodes": '
            r'\[\], "applied": false',
        ),
        C(
            "fault-step-not-reached-broadcast",
            f"{RUN} --workload broadcast {LINK} --set faults.step=50 --json",
            None,
            code=0,
            stdout=r'"step": 50, "nodes": \[\], "applied": false',
        ),
    ),
    *section(
        "Values: --set merges a section's shorthand",
        C(
            "set-shorthand-keeps-keys",
            f"{RUN} --set workload.packets=2 --set workload=uniform --json",
            None,
            code=0,
            stdout=r'"workload": \{"kind": "uniform", "packets": 2, ',
        ),
        C(
            "job-shorthand-then-set",
            "run job.toml --quiet --json --set workload.packets=3",
            None,
            code=0,
            stdout=r'"workload": \{"kind": "uniform", "packets": 3, ',
            files={"job.toml": 'topology = "star:4"\nworkload = "uniform"\n'},
        ),
        C(
            "set-shorthand-conflict",
            f"{RUN} --set workload.packets=2 --set workload=broadcast",
            r"workload\.packets = 2 has no effect: workload\.kind = 'broadcast' does not read it",
        ),
    ),
    *section(
        "Values: environment variables",
        C("env-timeout-tiny", "info star:4", TIMEOUT + "1e-9", env={"MPINET_TIMEOUT": "1e-9"}),
        C("env-timeout-nan", "info star:4", TIMEOUT + "nan", env={"MPINET_TIMEOUT": "nan"}),
        C("env-timeout-huge", "info star:4", TIMEOUT + "1e400", env={"MPINET_TIMEOUT": "1e400"}),
        C(
            "env-timeout-inf-mpi",
            f"{RUN} --trace-level none",
            TIMEOUT + "inf",
            env={"MPINET_TIMEOUT": "inf"},
            ranks=2,
        ),
        C(
            "env-memory-limit-two-dots",
            "info star:4",
            r"MPINET_MEMORY_LIMIT must be a size in bytes from 1M to 1P, such as 512M, 2G or "
            r"1\.5GiB, got '1\.5\.5'",
            env={"MPINET_MEMORY_LIMIT": "1.5.5"},
        ),
        C(
            "env-memory-limit-tiny",
            "info star:4",
            r"MPINET_MEMORY_LIMIT must be a size in bytes from 1M to 1P, .*got '100'",
            env={"MPINET_MEMORY_LIMIT": "100"},
        ),
        C(
            "env-consolidate-lots",
            f"{RUN} --out t.h5",
            r"MPINET_TRACE_CONSOLIDATE_MIB must be a number of MiB in \[0, 1,048,576\], "
            r"got 'lots'",
            env={"MPINET_TRACE_CONSOLIDATE_MIB": "lots"},
        ),
        C(
            "env-consolidate-lots-mpi",
            f"{RUN} --out t.h5",
            r"MPINET_TRACE_CONSOLIDATE_MIB must be a number of MiB .*got 'lots'",
            env={"MPINET_TRACE_CONSOLIDATE_MIB": "lots"},
            ranks=2,
        ),
        C(
            "env-progress-delay-negative",
            "info star:4",
            r"MPINET_PROGRESS_DELAY must be in \[0, 86,400\] seconds, got -1",
            env={"MPINET_PROGRESS_DELAY": "-1"},
        ),
        C(
            "env-test-fail-rank-garbage",
            "info star:4",
            r"MPINET_TEST_FAIL_RANK must be an integer in \[0, 2,147,483,647\], got 'one'",
            env={"MPINET_TEST_FAIL_RANK": "one"},
        ),
    ),
    *section(
        "Values: info --faults and faults files",
        C(
            "info-faults-seed-negative",
            "info star:4 --faults seed=-5,random_links=0.1",
            r"--faults " + SEED + "-5",
        ),  # fmt: skip
        C(
            "info-faults-seed-beyond-63-bits",
            f"info star:4 --faults seed={2**63},random_links=0.1",
            r"--faults " + SEED + str(2**63),
        ),
        C(
            "info-faults-every-node",
            "info star:4 --faults random_nodes=0.99999999",
            r"--faults: every node of star:4 failed \(24 of 24\), so no surviving graph is left "
            r"to describe",
        ),
        C(
            "info-faults-every-node-mpi",
            "info star:4 --faults random_nodes=0.99999999",
            r"--faults: every node of star:4 failed",
            ranks=2,
        ),
        C(
            "info-faults-nan",
            "info star:4 --faults random_links=nan",
            r"--faults random_links must be in \[0, 1\) \(a probability\), got nan",
        ),
        C(
            "info-faults-key-twice",
            "info star:4 --faults seed=1,random_links=0.1,seed=2",
            r"--faults gives seed twice; give each key once",
        ),
        C(
            "faults-file-probability-string",
            FAULTS_FILE,
            r"f\.toml: faults\.random_links must be a probability in \[0, 1\), got 'x'",
            files=faults_file('random_links = "x"'),
        ),
        C(
            "faults-file-nodes-number",
            FAULTS_FILE,
            r'f\.toml: faults\.nodes must be a list of node labels, e\.g\. \["1234"\], got 5',
            files=faults_file("nodes = 5"),
        ),
        C(
            "faults-file-link-of-one",
            FAULTS_FILE,
            r"f\.toml: faults\.links takes pairs of node labels, e\.g\. \[\['a', 'b'\]\]; "
            r"got \[1\]",
            files=faults_file("links = [[1]]"),
        ),
        C(
            "faults-file-step-float",
            FAULTS_FILE,
            r"f\.toml: faults\.step must be an integer in \[0, 2,147,483,646\], got 1\.5",
            files=faults_file("step = 1.5"),
        ),
        C(
            "faults-file-seed-string",
            FAULTS_FILE,
            r"f\.toml: " + SEED.replace("must be in", "must be an integer in") + "'x'",
            files={"f.toml": 'seed = "x"\n[faults]\nrandom_links = 0.1\n'},
        ),
        C(
            "faults-file-nan-mpi",
            FAULTS_FILE,
            r"f\.toml: faults\.random_nodes must be in \[0, 1\) \(a probability\), got nan",
            files=faults_file("random_nodes = nan"),
            ranks=2,
        ),
    ),
    *section(
        "Values: command-line flags",
        C(
            "run-timeout-nan",
            f"{RUN} --timeout nan",
            r"argument --timeout: must be in \[0\.1, 604,800\] seconds, got nan",
        ),
        C(
            "run-timeout-tiny-mpi",
            f"{RUN} --timeout 1e-9",
            r"argument --timeout: must be in \[0\.1, 604,800\] seconds, got 1e-9",
            ranks=2,
        ),
        C(
            "run-rate-not-a-number",
            f"{BERNOULLI} --steps 5 --rate often",
            r"argument --rate: workload\.rate must be a probability in \(0, 1\], got 'often'",
        ),
        C(
            "run-max-steps-huge",
            f"{RUN} --max-steps {2**40}",
            r"argument --max-steps: max_steps must be in \[1, 2,147,483,646\], got 1099511627776",
        ),
        C(
            "sweep-accept-tol-nan",
            f"{SWEEP} --accept-tol nan",
            r"argument --accept-tol: must be in \(0, 1\), got nan",
        ),
        C(
            "sweep-latency-factor-inf",
            f"{SWEEP} --latency-factor inf",
            r"argument --latency-factor: must be in \(1, 1,000,000,000,000\], got inf",
        ),
        C(
            "sweep-warmup-not-an-integer-mpi",
            f"{SWEEP} --warmup 1e3",
            r"argument --warmup: must be an integer, got '1e3'",
            ranks=2,
        ),
        C(
            "sweep-seed-nan",
            f"{SWEEP} --seed nan",
            r"argument --seed: " + SEED.replace("must be in", "must be an integer in") + "'nan'",
        ),
        C(
            "analyze-chunk-rows-huge",
            f"analyze t.h5 --chunk-rows {10**12}",
            r"argument --chunk-rows: must be in \[1, 16,777,216\], got 1000000000000",
        ),
        C(
            "bench-buffer-negative",
            "bench --specs star:4 --buffer -1",
            r"argument --buffer: model\.buffer must be in \[0, 1,048,576\], got -1",
        ),
        C(
            "deadlock-max-hops-huge",
            f"deadlock star:4 --router shortest --max-hops {10**9}",
            r"argument --max-hops: must be in \[1, 65,536\], got 1000000000",
        ),
        C(
            "info-fault-diameter-nan",
            "info star:4 --fault-diameter nan",
            r"argument --fault-diameter: K must be an integer in \[1, 2\], got 'nan'",
        ),
    ),
    *section(
        "Values: --json is strict JSON",
        C(
            "json-run-nothing-delivered",
            f"{RUN} {NOTHING_DELIVERED} --json",
            None,
            code=0,
            stdout=STRICT_JSON,
        ),
        C(
            "json-run-nothing-delivered-mpi",
            f"{RUN} {NOTHING_DELIVERED} --json",
            None,
            code=0,
            stdout=STRICT_JSON,
            ranks=2,
        ),
        C(
            "json-run-nothing-injected",
            f"{BERNOULLI} --steps 1 --set workload.rate=1e-6 --json",
            None,
            code=0,
            stdout=STRICT_JSON,
        ),
        C(
            "json-sweep-empty-window",
            f"{SWEEP} --rates 0.001 --warmup 0 --measure 1 --drain 0 --json",
            None,
            code=0,
            stdout=STRICT_JSON,
        ),
        C(
            "json-info-one-survivor",
            "info star:3 --faults 'nodes=123;213;231;321;312' --json",
            None,
            code=0,
            stdout=STRICT_JSON,
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 35 and sum(c.ranks > 1 for c in CASES) >= 5
    assert sum(c.stdout == STRICT_JSON for c in CASES) >= 3


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_value_case(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
