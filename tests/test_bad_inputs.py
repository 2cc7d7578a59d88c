"""The bad-input catalogue: every input mpinet must refuse, run through the real CLI.

The cases of the first catalogue (stop 12 onwards): memory, output locations, job files,
numbers, ignored settings, analyze, topology specs, routers and models, faults, the command
line, export. Each runs ``python -m mpinet ARGS`` in a fresh directory (under ``mpiexec -n
2`` for the cases with ``ranks=2``, where validation is agreed across ranks) and is checked
by :func:`catalogue.check`: exit code, one stderr line from rank 0 matching the case's
pattern, no traceback, nothing on stdout, the directory unchanged, an answer within the
limit, and the line shown in docs/reliability.md ("Bad-input catalogue").

The commands are written as a shell would split them (:func:`shlex.split`); ``{parts}`` is
the parts directory of the split trace a case copied.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from catalogue import Case, Given, Maker, described, param, run_and_check, section

SEED_RANGE = r"seed must be in \[0, 9,223,372,036,854,775,807\], got "


# -- what a case creates before it runs ---------------------------------------------------------
@described("a directory", slash=True)
def directory(path: Path, traces) -> None:
    path.mkdir()


@described("-> `gone/t.h5` (dangling)")
def dangling(path: Path, traces) -> None:
    path.symlink_to("gone/t.h5")


@described("immutable (`chattr +i`)", slash=True)
def read_only(path: Path, traces) -> None:
    """A directory root cannot write into: immutable (``chattr +i``), as root ignores modes."""
    path.mkdir()
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here: no read-only directory for root")


read_only.immutable = True


def copy_of(name: str) -> Maker:
    """A copy of one of the real traces (the split one with its parts directory)."""

    def make(path: Path, traces) -> None:
        src = traces()[name]
        shutil.copy(src, path)
        for parts in src.parent.glob(f"{src.name}.parts-*"):
            shutil.copytree(parts, path.parent / f"{path.name}{parts.name[len(src.name) :]}")

    make.text = "a real trace" + (" (split, with parts)" if name == "split" else "")
    return make


def corrupt_copy(dataset: str) -> Maker:
    """A copy of the serial trace with one byte of ``dataset``'s first chunk inverted."""

    def make(path: Path, traces) -> None:
        import h5py

        shutil.copy(traces()["serial"], path)
        with h5py.File(path, "r") as f:
            offset = f[dataset].id.get_chunk_info(0).byte_offset + 9
        with open(path, "r+b") as fh:
            fh.seek(offset)
            byte = fh.read(1)[0]
            fh.seek(offset)
            fh.write(bytes([byte ^ 0xFF]))

    make.text = f"a real trace, a byte of `{dataset}` inverted"
    return make


@described("a split trace, parts directory removed")
def without_parts(path: Path, traces) -> None:
    """The master file of a split trace whose parts directory was removed."""
    shutil.copy(traces()["split"], path)


JOB = 'topology = "star:4"\n'
NOTES = {"notes.txt": "precious\n"}

RUN = "run --topology star:4 --quiet"
ROUTES = "routes scc:4 --router scc-greedy"
ONE_PORT_BC = "--workload broadcast --model one-port"
LINK = """--set 'faults.links=[["1234","2134"]]'"""  # neighbours in star:4 (generator T2)
EDGES = "export star:4 --format edgelist"

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


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 60 and sum(c.ranks > 1 for c in CASES) >= 10


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
