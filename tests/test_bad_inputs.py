"""The bad-input catalogue: every input mpinet must refuse, run through the real CLI.

The cases of the first catalogue (stop 12 onwards), in three modules: here memory, output
locations and job files; numbers, ignored settings and analyze in
tests/test_bad_inputs_values.py; topology specs, routers and models, faults, the command
line and export in tests/test_bad_inputs_specs.py (what they share:
tests/bad_inputs_common.py). Each runs ``python -m mpinet ARGS`` in a fresh directory (under
``mpiexec -n 2`` for the cases with ``ranks=2``, where validation is agreed across ranks) and
is checked by :func:`catalogue.check`: exit code, one stderr line from rank 0 matching the
case's pattern, no traceback, nothing on stdout, the directory unchanged, an answer within
the limit, and the line shown in docs/reliability.md ("Bad-input catalogue").

The commands are written as a shell would split them (:func:`shlex.split`); ``{parts}`` is
the parts directory of the split trace a case copied.
"""

from __future__ import annotations

import pytest
from bad_inputs_common import (
    JOB,
    NOTES,
    ROUTES,
    RUN,
    SEED_RANGE,
    copy_of,
    dangling,
    directory,
    read_only,
)
from catalogue import Case, Given, param, run_and_check, section
from test_bad_inputs_specs import CASES as SPECS
from test_bad_inputs_values import CASES as VALUES

C = Case
CASES: list[Case] = [
    *section(
        "Memory-filling jobs: refused from the plan, before allocating",
        C(
            "run-hypercube26",
            "run --topology hypercube:26 --router hypercube-ecube",
            r"run on hypercube:26 .* needs about [\d.]+ GiB per rank .* is available .*way out: ",
        ),
        C(
            "run-hypercube26-mpi",
            "run --topology hypercube:26 --router hypercube-ecube",
            r"run on hypercube:26 .* for the 2 rank\(s\) on this machine",
            ranks=2,
        ),
        C(
            "run-fccn9",
            "run --topology fccn:9 --router fccn-sroute",
            r"run on fccn:9 .* needs about .* per rank .* way out: ",
        ),
        C(
            "run-star12-mpi",
            "run --topology star:12 --router star-greedy",
            r"run on star:12 .* for the 2 rank\(s\) on this machine, .* way out: ",
            ranks=2,
        ),
        C(
            "run-scc6-200k-packets",
            "run --topology scc:6 --packets 200000",
            r"run on scc:6 .* way out: .*fewer packets \(workload\.packets <= \d+ fits\)",
        ),
        C(
            "run-te-routed-scc7",
            """run --topology scc:7 --workload te --set 'workload.algorithm="routed"'""",
            r"run on scc:7 .* needs about .* per rank .* way out: ",
        ),
        C(
            "run-scc20-int64",
            "run --topology scc:20 --router scc-greedy",
            r"scc:20 has [\d,]+ nodes, more than mpinet's int64 node ids allow",
        ),
        C("info-scc20-int64", "info scc:20", r"scc:20 has [\d,]+ nodes, .*int64"),
        C(
            "info-fccn8",
            "info fccn:8",
            r"all-sources BFS on fccn:8 .* word operations \(limit .*\); it can afford about 64 "
            r"sources; way out: --sources K \(K <= 64; an estimate\), --source LABEL",
        ),
        C("info-fccn8-mpi", "info fccn:8", r"all-sources BFS on fccn:8 .* --source LABEL", ranks=2),
        C(
            "routes-sample-1e9",
            f"{ROUTES} --pairs sample:1000000000",
            r"--pairs sample:K on scc:4 .*\(limit 50,000,000\); way out: --pairs sample:K",
        ),
        C(
            "routes-hypercube30",
            "routes hypercube:30 --router hypercube-ecube",
            r"--pairs to-identity on hypercube:30 .* \(limit 50,000,000\); "
            r"way out: --pairs sample:K",
        ),
        C(
            "routes-hypercube30-mpi",
            "routes hypercube:30 --router hypercube-ecube",
            r"--pairs to-identity on hypercube:30 .*\(limit 50,000,000\)",
            ranks=2,
        ),
        C(
            "memory-limit-env",
            f"{RUN} --packets 64",
            r"needs about .* but 50\.0 MiB is available \(MPINET_MEMORY_LIMIT\); way out",
            env={"MPINET_MEMORY_LIMIT": "50M"},
        ),
        C(
            "memory-limit-env-garbage",
            RUN,
            r"MPINET_MEMORY_LIMIT.*'lots'",
            env={"MPINET_MEMORY_LIMIT": "lots"},
        ),
    ),
    *section(
        "Output locations: refused while planning, nothing created",
        C(
            "out-read-only-dir",
            f"{RUN} --out ro/t.h5",
            r"cannot write trace .*/ro/t\.h5: directory .*/ro is not writable; choose another",
            files={"ro": read_only},
        ),
        C(
            "out-under-a-file",
            f"{RUN} --out notes.txt/t.h5",
            r"cannot write trace .*notes\.txt/t\.h5: directory .*notes\.txt is not a directory",
            files=NOTES,
        ),
        C(
            "out-missing-dir",
            f"{RUN} --out nodir/t.h5",
            r"directory .*/nodir does not exist; create it first or choose another path",
        ),
        C(
            "out-missing-dir-mpi",
            f"{RUN} --out nodir/t.h5",
            r"directory .*/nodir does not exist; create it first",
            ranks=2,
        ),
        C(
            "out-dangling-symlink",
            f"{RUN} --out link.h5",
            r"link\.h5 is a dangling symbolic link \(to gone/t\.h5\); remove the link or choose",
            files={"link.h5": dangling},
        ),
        C(
            "out-dangling-symlink-mpi",
            f"{RUN} --out link.h5",
            r"link\.h5 is a dangling symbolic link",
            files={"link.h5": dangling},
            ranks=2,
        ),
        C("out-empty", f"{RUN} --out ''", r"the trace path is empty; give a file name"),
        C(
            "out-trace-path-empty",
            f"""{RUN} --set 'trace.path=""'""",
            r"the trace path is empty; give a file name",
        ),
        C(
            "out-newdir-slash",
            f"{RUN} --out newdir/",
            r"'newdir/' ends in '/', so it names a directory; "
            r"give a file name such as newdir/run\.h5",
        ),
        C(
            "out-existing-directory",
            f"{RUN} --out sub --force",
            r"sub is a directory",
            files={"sub": directory},
        ),
        C(
            "out-job-file",
            "run job.toml --quiet --out job.toml",
            r"job\.toml is the job file itself; choose another path for the trace",
            files={"job.toml": JOB},
        ),
        C(
            "out-job-file-force",
            "run job.toml --quiet --out job.toml --force",
            r"job\.toml is the job file itself; choose another path",
            files={"job.toml": JOB},
        ),
        C(
            "out-job-file-force-mpi",
            "run job.toml --quiet --out job.toml --force",
            r"job\.toml is the job file itself",
            files={"job.toml": JOB},
            ranks=2,
        ),
        C(
            "out-inside-parts-dir",
            f"{RUN} --out {{parts}}/x.h5",
            r"is inside s\.h5\.parts-[0-9a-f]{8}, the parts directory of another trace; choose a "
            r"path outside it",
            files={"s.h5": copy_of("split")},
        ),
        C(
            "out-existing-trace",
            f"{RUN} --out t.h5",
            r"trace .*t\.h5 exists; use --force",
            files={"t.h5": copy_of("serial")},
        ),
        C(
            "out-not-a-trace-force",
            f"{RUN} --out notes.txt --force",
            r"notes\.txt exists and is not an mpinet trace; --force replaces only mpinet traces",
            files=NOTES,
        ),
        C(
            "out-not-a-trace-force-mpi",
            f"{RUN} --out notes.txt --force",
            r"notes\.txt exists and is not an mpinet trace",
            files=NOTES,
            ranks=2,
        ),
        C("out-name-too-long", f"{RUN} --out {'x' * 300}.h5", r"too long"),
        C("seed-beyond-64-bits", f"{RUN} --seed {2**64} --out t.h5", SEED_RANGE + str(2**64)),
        C("seed-negative", f"{RUN} --seed -1", SEED_RANGE + "-1"),
        C(
            "routes-seed-beyond-64-bits",
            f"{ROUTES} --pairs sample:10 --seed {2**64}",
            SEED_RANGE + str(2**64),
        ),
        C(
            "deadlock-seed-negative",
            "deadlock scc:4 --router scc-random --seed -1",
            SEED_RANGE + "-1",
        ),
    ),
    *section(
        "Job files",
        C(
            "job-directory",
            "run d.toml",
            r"job file d\.toml is a directory; give a \.toml file",
            files={"d.toml": directory},
        ),
        C(
            "job-not-utf8",
            "run latin1.toml",
            r"job file latin1\.toml is not UTF-8 text \(byte 0xe9 at offset \d+\); TOML files are "
            r"UTF-8",
            files={
                "latin1.toml": Given(
                    'topology = "star:4" # caf\xe9\n'.encode("latin-1"), ": Latin-1 text"
                )
            },
        ),
        C(
            "job-binary",
            "run bin.toml",
            r"job file bin\.toml is binary, not a TOML text file",
            files={"bin.toml": Given(b"\x7fELF\x02\x01\x01\x00\x00\x00", ": ELF bytes")},
        ),
        C(
            "job-binary-mpi",
            "run bin.toml",
            r"job file bin\.toml is binary",
            files={"bin.toml": Given(b"\x7fELF\x02\x01\x01\x00\x00\x00", ": ELF bytes")},
            ranks=2,
        ),
        C(
            "job-empty",
            "run empty.toml",
            r"empty\.toml: the key 'topology' is required \(e\.g\. topology = \"scc:5\"\)",
            files={"empty.toml": ""},
        ),
        C(
            "job-invalid-toml",
            "run bad.toml",
            r"job file bad\.toml is not valid TOML: .*line 1",
            files={"bad.toml": "topology = \n"},
        ),
        C("job-missing", "run none.toml", r"job file none\.toml does not exist"),
        C(
            "job-unknown-key",
            "run job.toml",
            r"job\.toml: unknown key 'topolgy'; valid keys: topology, ",
            files={"job.toml": 'topolgy = "star:4"\n'},
        ),
        C(
            "job-unknown-key-mpi",
            "run job.toml",
            r"job\.toml: unknown key 'topolgy'; valid keys",
            files={"job.toml": 'topolgy = "star:4"\n'},
            ranks=2,
        ),
        C(
            "job-unknown-section-key",
            "run job.toml",
            r"job\.toml: unknown key .*packet.*; valid keys in \[workload\]: kind, packets",
            files={"job.toml": JOB + "[workload]\npacket = 4\n"},
        ),
        C(
            "job-wrong-type",
            "run job.toml",
            r"job\.toml: workload\.packets must be an integer in \[1, 1,048,576\], got 'many'",
            files={"job.toml": JOB + '[workload]\npackets = "many"\n'},
        ),
        C(
            "faults-file-missing",
            "info star:4 --faults-file none.toml",
            r"job file none\.toml does not exist",
        ),
    ),
]


def test_the_catalogue_is_complete():
    cases = CASES + VALUES + SPECS
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids))
    assert len(cases) >= 60 and sum(c.ranks > 1 for c in cases) >= 10


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
