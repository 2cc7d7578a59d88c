"""The outputs catalogue: every command that writes, under one discipline (mpinet.outputs).

For ``run``, ``sweep`` (``--out`` and ``--plot``), ``export``, ``analyze --plot`` and
``bench``: paths refused before any work (the job file, another kind's file with
``--force``, a trailing ``/``, a file where a directory belongs, a path another command
is writing), and writes that fail on a full file system (a tmpfs of the case's own):
exit code 3, the results printed, one line on stderr, nothing partial left, on 1 to 3
ranks. Checked by :func:`catalogue.check` like every catalogue case.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from catalogue import (
    ROOT,
    STRICT_JSON,
    Case,
    Given,
    described,
    fill,
    param,
    run_and_check,
    section,
)

JOB = 'topology = "star:4"\n'
NOTES = {"notes.txt": "precious\n"}
RUN = "run --topology star:4 --quiet"
SWEEP = "sweep --topology star:4 --rates 0.1 --warmup 10 --measure 20 --drain 40 --quiet"
BIG_RUN = "run --topology scc:5 --packets 4 --trace-level hops --out t.h5"
#: bytes of the small file systems: far below the outputs of the cases
SMALL = 256 << 10
#: a PNG that says mpinet drew it (mpinet.outputs.kinds.FIGURE_TAG)
OUR_PNG = Given(b"\x89PNG\r\n\x1a\n" + b"Software\0mpinet (figure)" + bytes(64), "an mpinet figure")
_HELD: list[int] = []  # lock files held by "another writer" for the whole session


def _mpinet(args: list[str], cwd: Path, **env: str) -> None:
    environ = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    cmd = [sys.executable, "-m", "mpinet", *args]
    subprocess.run(cmd, cwd=cwd, env=environ, check=True, capture_output=True, timeout=120)


@described("held by another writer (`flock` on `.NAME.lock`)")
def locked(path: Path, traces) -> None:
    """Another mpinet command is writing ``path``: its lock file is held."""
    fd = os.open(path.parent / f".{path.name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    os.pwrite(fd, b"pid 4242 on elsewhere", 0)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _HELD.append(fd)


@described("a directory", slash=True)
def directory(path: Path, traces) -> None:
    path.mkdir()


@described("a real sweep file")
def sweep_file(path: Path, traces) -> None:
    _mpinet([*SWEEP.split(), "--out", path.name], path.parent)


def serial_trace(path: Path, traces) -> None:
    import shutil

    shutil.copy(traces()["serial"], path)


serial_trace.text = "a real trace"


def full(keep: int = 0):
    """The file system filled up to ``keep`` free bytes (a file ``.fill``)."""

    def make(path: Path, traces) -> None:
        fill(path.parent, keep)

    make.text = "the file system full" + (f" but {keep >> 10} KiB" if keep else "")
    return make


def trace_then_full(path: Path, traces) -> None:
    serial_trace(path, traces)
    fill(path.parent, 0)


trace_then_full.text = "a real trace; the file system full"


def sweep_then_full(path: Path, traces) -> None:
    sweep_file(path, traces)
    fill(path.parent, 0)


sweep_then_full.text = "a real sweep file; the file system full"


def only(*names: str):
    """``left``: the case may add exactly these names (and nothing else changes)."""

    def check(before: dict, after: dict, d: Path) -> None:
        added = set(after) - set(before)
        assert added == set(names), f"added {sorted(added)}, expected {sorted(names)}"
        assert all(after[k] == v for k, v in before.items()), "a file was changed or removed"

    return check


FULL = {".fill": full()}
C = Case
CASES: list[Case] = [
    *section(
        "Sweep: outputs refused before the sweep",
        C(
            "sweep-out-job-file-force",
            "sweep job.toml --rates 0.1 --warmup 10 --measure 20 --quiet --out job.toml --force",
            r"sweep file path .*job\.toml is the job file itself; choose another path",
            files={"job.toml": JOB},
        ),
        C(
            "sweep-out-job-file-force-mpi",
            "sweep job.toml --rates 0.1 --warmup 10 --measure 20 --quiet --out job.toml --force",
            r"job\.toml is the job file itself",
            files={"job.toml": JOB},
            ranks=2,
        ),
        C(
            "sweep-out-text-file-force",
            f"{SWEEP} --out notes.txt --force",
            r"notes\.txt exists and is not an mpinet sweep file; --force replaces only mpinet "
            r"sweep files",
            files=NOTES,
        ),
        C(
            "sweep-out-trace-force",
            f"{SWEEP} --out t.h5 --force",
            r"t\.h5 exists and is not an mpinet sweep file",
            files={"t.h5": serial_trace},
        ),
        C(
            "sweep-out-exists",
            f"{SWEEP} --out s.h5",
            r"sweep file .*s\.h5 exists; use --force to replace it",
            files={"s.h5": sweep_file},
        ),
        C(
            "sweep-out-trailing-slash",
            f"{SWEEP} --out newdir/",
            r"sweep file path 'newdir/' ends in '/', so it names a directory; give a file name "
            r"such as newdir/sweep\.h5",
        ),
        C(
            "sweep-out-directory",
            f"{SWEEP} --out sub --force",
            r"sweep file path .*sub is a directory",
            files={"sub": directory},
        ),
        C(
            "sweep-out-missing-directory",
            f"{SWEEP} --out nodir/s.h5",
            r"cannot write sweep file .*nodir/s\.h5: directory .*nodir does not exist",
        ),
        C(
            "sweep-out-being-written",
            f"{SWEEP} --out s.h5",
            r"sweep file .*s\.h5 is being written by another mpinet command \(pid 4242 on "
            r"elsewhere\); wait for it to finish or choose another path",
            files={"s.h5": locked},
        ),
        C(
            "sweep-plot-is-a-file",
            f"{SWEEP} --plot notes.txt",
            r"plot directory .*notes\.txt exists and is not a directory",
            files=NOTES,
        ),
        C(
            "sweep-plot-under-a-file",
            f"{SWEEP} --plot notes.txt/figs",
            r"cannot create plot directory .*notes\.txt/figs: .*notes\.txt is not a directory",
            files=NOTES,
        ),
        C(
            "sweep-plot-figure-not-ours-force",
            f"{SWEEP} --plot . --force",
            r"sweep_star-4-shortest_latency\.png exists and is not an mpinet figure",
            files={"sweep_star-4-shortest_latency.png": "a photo\n"},
        ),
        C(
            "sweep-plot-figure-exists",
            f"{SWEEP} --plot .",
            r"figure .*sweep_star-4-shortest_accepted\.svg exists; use --force to replace it",
            files={
                "sweep_star-4-shortest_accepted.svg": Given(
                    b"<svg>mpinet (figure)</svg>", "an mpinet figure"
                )
            },  # fmt: skip
        ),
    ),
    *section(
        "Export, analyze --plot and bench: outputs refused before the work",
        C(
            "export-out-text-file-force",
            "export star:4 --format anynet --out notes.txt --force",
            r"notes\.txt exists and is not an mpinet anynet file; --force replaces only mpinet "
            r"anynet files",
            files=NOTES,
        ),
        C(
            "export-out-trace-force",
            "export star:4 --format graphml --out t.h5 --force",
            r"t\.h5 exists and is not an mpinet GraphML file",
            files={"t.h5": serial_trace},
        ),
        C(
            "export-out-trailing-slash",
            "export star:4 --format edgelist --out newdir/",
            r"edge list path 'newdir/' ends in '/', so it names a directory",
        ),
        C(
            "export-out-being-written",
            "export star:4 --format edgelist --out e.txt",
            r"edge list .*e\.txt is being written by another mpinet command",
            files={"e.txt": locked},
        ),
        C(
            "export-out-being-written-mpi",
            "export star:4 --format edgelist --out e.txt",
            r"edge list .*e\.txt is being written by another mpinet command",
            files={"e.txt": locked},
            ranks=2,
        ),
        C(
            "analyze-plot-is-a-file",
            "analyze t.h5 --plot notes.txt",
            r"plot directory .*notes\.txt exists and is not a directory",
            files={"t.h5": serial_trace, **NOTES},
        ),
        C(
            "analyze-plot-figure-exists",
            "analyze t.h5 --plot .",
            r"figure .*t_route_lengths\.png exists; use --force to replace it",
            files={"t.h5": serial_trace, "t_route_lengths.png": OUR_PNG},
        ),
        C(
            "analyze-plot-figure-not-ours-force",
            "analyze t.h5 --plot . --force",
            r"t_steps\.svg exists and is not an mpinet figure; --force replaces only mpinet "
            r"figures",
            files={"t.h5": serial_trace, "t_steps.svg": "<svg>my own drawing</svg>\n"},
        ),
        C(
            "analyze-plot-missing-trace",
            "analyze none.h5 --plot figs",
            r"trace file none\.h5 does not exist",
        ),
        C(
            "analyze-plot-compare-names",
            "analyze t.h5 --compare u.h5 --plot .",
            r"figure .*t_vs_u_latency_cdf\.png exists; use --force",
            files={"t.h5": serial_trace, "u.h5": serial_trace, "t_vs_u_latency_cdf.png": OUR_PNG},
        ),
        C(
            "bench-refused-leaves-no-scratch",
            "bench --specs star:99 --repeat 1",
            r"N in star:N must be in \[3, 20\], got 99",
            env={"TMPDIR": "{dir}"},
        ),
        C(
            "bench-refused-leaves-no-scratch-mpi",
            "bench --specs star:4@zzz --repeat 1",
            r"unknown router 'zzz'",
            env={"TMPDIR": "{dir}"},
            ranks=2,
        ),
        C(
            "run-out-being-written",
            f"{RUN} --out t.h5",
            r"trace .*t\.h5 is being written by another mpinet command \(pid 4242 on elsewhere\)",
            files={"t.h5": locked},
        ),
        C(
            "run-out-being-written-mpi",
            f"{RUN} --out t.h5",
            r"trace .*t\.h5 is being written by another mpinet command",
            files={"t.h5": locked},
            ranks=2,
        ),
        C(
            "run-out-export-force",
            f"{RUN} --out net.txt --force",
            r"net\.txt exists and is not an mpinet trace",
            files={"net.txt": "# mpinet export star:4: 24 nodes\n0 1 T2 star\n"},
        ),
    ),
    *section(
        "A full file system: the results printed, exit code 3, nothing partial left",
        C(
            "run-trace-disk-full",
            BIG_RUN,
            r"trace not written: writing trace .*t\.h5 failed on rank 0: No space left on device",
            code=3,
            stdout=r"^delivered +1,920 of 1,920\n(.*\n)*trace +NOT WRITTEN",
            files=FULL,
            fs=SMALL,
        ),
        C(
            "run-trace-disk-full-json",
            f"{BIG_RUN} --json",
            r"trace not written: .*No space left on device",
            code=3,
            stdout=STRICT_JSON,
            files=FULL,
            fs=SMALL,
        ),
        C(
            "run-trace-disk-full-mpi",
            BIG_RUN,
            r"trace not written: writing trace .*t\.h5 failed on rank \d: No space left",
            code=3,
            stdout=r"on 2 rank\(s\)(.*\n)*trace +NOT WRITTEN",
            files=FULL,
            fs=SMALL,
            ranks=2,
        ),
        C(
            "run-trace-disk-full-split-3",
            BIG_RUN,
            r"trace not written: writing trace .*t\.h5 failed on rank \d: No space left",
            code=3,
            stdout=r"on 3 rank\(s\)(.*\n)*trace +NOT WRITTEN",
            files=FULL,
            fs=SMALL,
            ranks=3,
            env={"MPINET_TRACE_CONSOLIDATE_MIB": "0"},
        ),
        C(
            "run-trace-disk-full-split-4",
            BIG_RUN,
            r"trace not written: writing trace .*t\.h5 failed on rank \d: No space left",
            code=3,
            stdout=r"on 4 rank\(s\)(.*\n)*trace +NOT WRITTEN",
            files=FULL,
            fs=SMALL,
            ranks=4,
            env={"MPINET_TRACE_CONSOLIDATE_MIB": "0"},
        ),
        C(
            "run-trace-disk-nearly-full",
            BIG_RUN,
            r"trace not written: .*No space left on device",
            code=3,
            stdout=r"trace +NOT WRITTEN",
            files={".fill": full(48 << 10)},
            fs=SMALL,
        ),
        C(
            "sweep-out-disk-full",
            f"{SWEEP} --out s.h5",
            r"cannot write sweep file .*s\.h5: No space left on device",
            code=3,
            stdout=r"^offered .*\n(.*\n)*file +NOT WRITTEN",
            files=FULL,
            fs=SMALL,
        ),
        C(
            "sweep-out-disk-full-mpi",
            f"{SWEEP} --out s.h5",
            r"cannot write sweep file .*s\.h5: No space left on device",
            code=3,
            stdout=r"file +NOT WRITTEN",
            files=FULL,
            fs=SMALL,
            ranks=2,
        ),
        C(
            "sweep-plot-disk-full",
            f"{SWEEP} --plot figs",
            r"cannot write figure .*figs/sweep_star-4-shortest_latency\.png: No space left",
            code=3,
            stdout=r"^saturation ",
            files=FULL,
            fs=SMALL,
        ),
        C(
            "sweep-json-disk-full",
            f"{SWEEP} --out s.h5 --json",
            r"cannot write sweep file .*No space left on device",
            code=3,
            stdout=STRICT_JSON,
            files=FULL,
            fs=SMALL,
        ),
        C(
            "export-disk-full",
            "export star:6 --format graphml --out g.graphml",
            r"cannot write GraphML file .*g\.graphml: No space left on device",
            code=3,
            files=FULL,
            fs=SMALL,
        ),
        C(
            "export-disk-full-mpi",
            "export star:6 --format edgelist --out e.txt",
            r"cannot write edge list .*e\.txt: No space left on device",
            code=3,
            files=FULL,
            fs=SMALL,
            ranks=2,
        ),
        C(
            "analyze-plot-disk-full",
            "analyze t.h5 --plot figs",
            r"cannot write figure .*figs/t_route_lengths\.png: No space left on device",
            code=3,
            stdout=r"^latency ",
            files={"t.h5": trace_then_full},
            fs=SMALL,
        ),
        C(
            "analyze-sweep-plot-disk-full",
            "analyze s.h5 --plot figs",
            r"cannot write figure .*figs/s_latency\.png: No space left on device",
            code=3,
            stdout=r"^offered ",
            files={"s.h5": sweep_then_full},
            fs=SMALL,
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert sum(c.fs > 0 for c in CASES) >= 10 and sum(c.ranks > 1 for c in CASES) >= 8


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_output_case(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
